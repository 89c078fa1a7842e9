package gpubsub

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DeletedTopic is the topic Pub/Sub gives the subscriptions of a deleted
// topic (DeleteTopic: "Existing subscriptions to this topic are not
// deleted, but their topic field is set to _deleted-topic_"). They keep
// delivering their backlog and receive nothing from a topic re-created
// under the same name.
const DeletedTopic = "_deleted-topic_"

// Attachment is what a subscription receives from the topic it is
// declared for.
type Attachment string

// Attachments.
const (
	// Attached: the subscription exists and is attached to its topic.
	Attached Attachment = "attached"
	// Detached: its topic was deleted (topic _deleted-topic_) or it was
	// detached (DetachSubscription); it receives nothing new.
	Detached Attachment = "detached"
	// Missing: the subscription does not exist.
	Missing Attachment = "missing"
	// OtherTopic: the subscription is attached to another topic.
	OtherTopic Attachment = "other_topic"
)

// Receives reports whether a subscription in state a receives what is
// published to its declared topic.
func (a Attachment) Receives() bool { return a == Attached }

// AttachmentOf classifies s, a subscription declared for topic (the
// topic's id or full name; empty: any topic).
func AttachmentOf(s *pb.Subscription, topic string) Attachment {
	have := s.GetTopic()
	switch {
	case have == DeletedTopic || s.GetDetached():
		return Detached
	case topic != "" && have != topic && have[strings.LastIndex(have, "/")+1:] != topic:
		return OtherTopic
	}
	return Attached
}

// CheckAttachment reads subscription sub (an id or a full name) of project with
// GetSubscription (permission pubsub.subscriptions.get) and classifies it
// for topic. NOT_FOUND is Missing, not an error; any other error is
// returned classified (errclass.PermissionDenied when the caller may not
// read the subscription).
func CheckAttachment(ctx context.Context, client *pubsub.Client, project, sub, topic string) (Attachment, *pb.Subscription, error) {
	name := sub
	if !strings.HasPrefix(sub, "projects/") {
		name = SubscriptionName(project, sub)
	}
	s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: name})
	if status.Code(err) == codes.NotFound {
		return Missing, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading subscription %s: %w", sub, Target{Subscription: name}.Classify(err))
	}
	return AttachmentOf(s, topic), s, nil
}
