package command

import (
	"context"
	"fmt"
	"strings"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/iterator"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// allowLiveFlag is the override of the dead-letter check: dlq commands
// then act on a live subscription, say so, and record it in the audit.
const allowLiveFlag = "--allow-live-subscription"

// notDeadLetterError says why sub is no dead-letter subscription; it is a
// usage error (exit 2) naming the override.
func notDeadLetterError(sub, why string) error {
	return usageErr("%s is not a dead-letter subscription: %s. Its messages are live events: pulling them delays them, acking them loses them. "+
		"Give a dead-letter subscription (one on the dead-letter topic of a projection's subscription), or %s to act on it anyway (audited)", sub, why, allowLiveFlag)
}

// checkDeadLetter returns nil when sub is a dead-letter subscription: it
// has no dead-letter policy of its own (a nack there forwards nothing) and
// its topic is the dead-letter topic of a subscription declared in res or,
// failing that, of one in the project. It only reads (GetSubscription,
// ListSubscriptions): a refusal changes nothing.
func checkDeadLetter(ctx context.Context, client *pubsub.Client, cfg gpubsub.Config, res *gpubsub.Resources, sub string) error {
	name := gpubsub.SubscriptionName(cfg.ProjectID, sub)
	s, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: name})
	if err != nil {
		return fmt.Errorf("reading subscription %s: %w", sub, gpubsub.Target{Subscription: name}.Classify(err))
	}
	if dl := s.GetDeadLetterPolicy(); dl != nil {
		return notDeadLetterError(sub, "it has a dead-letter policy of its own (to "+shortName(dl.GetDeadLetterTopic())+"), so it is a source subscription")
	}
	topic := shortName(s.GetTopic())
	if res != nil {
		dlqTopics := map[string]bool{}
		for _, d := range res.Subscriptions {
			if d.DeadLetter != nil {
				dlqTopics[d.DeadLetter.Topic] = true
			}
		}
		if dlqTopics[topic] {
			return nil
		}
		for _, d := range res.Subscriptions {
			if d.Name == sub {
				return notDeadLetterError(sub, fmt.Sprintf("the resources file declares it on topic %s, which is no declared subscription's dead-letter topic", topic))
			}
		}
	}
	it := client.SubscriptionAdminClient.ListSubscriptions(ctx, &pb.ListSubscriptionsRequest{Project: "projects/" + cfg.ProjectID})
	for {
		o, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return fmt.Errorf("listing subscriptions to find the source of %s: %w", sub, gpubsub.Target{Subscription: name}.Classify(err))
		}
		if dl := o.GetDeadLetterPolicy(); dl != nil && dl.GetDeadLetterTopic() == s.GetTopic() {
			return nil
		}
	}
	return notDeadLetterError(sub, fmt.Sprintf("no subscription of project %s dead-letters into its topic %s", cfg.ProjectID, topic))
}

// shortName is the last segment of a resource name
// (projects/p/topics/t -> t).
func shortName(s string) string {
	return s[strings.LastIndex(s, "/")+1:]
}
