package gpubsub

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Actions of a Change on a detached subscription (its topic was deleted:
// topic _deleted-topic_, or it was detached). It receives nothing from
// its topic, and Pub/Sub cannot re-attach it: only deleting and creating
// it again with its declared settings does, dropping the backlog it still
// holds (re-drive from the outbox what it missed).
const (
	// DetachedFound: found detached and left alone (EnsureOptions.RecreateDetached
	// unset, or a dry run).
	DetachedFound = "detached"
	// Recreated: deleted and created again with the declared settings.
	Recreated = "recreated"
)

// EnsureOptions are EnsureWith's options.
type EnsureOptions struct {
	// DryRun changes nothing and reports what would change.
	DryRun bool
	// RecreateDetached deletes each detached subscription and creates it
	// again with its declared settings (action Recreated); without it a
	// detached subscription is reported as DetachedFound.
	RecreateDetached bool
}

// recreateDetached handles subscription have, found detached, whose
// declared settings are want.
func recreateDetached(ctx context.Context, client *pubsub.Client, have, want *pb.Subscription, o EnsureOptions) (Change, error) {
	ch := Change{Kind: "subscription", Name: idOf(want.Name), Action: DetachedFound,
		Diffs: []string{fmt.Sprintf("topic: %s -> %s (detached: receives nothing; re-creating it drops its backlog)", have.GetTopic(), want.Topic)}}
	if !o.RecreateDetached || o.DryRun {
		return ch, nil
	}
	err := client.SubscriptionAdminClient.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: want.Name})
	if err != nil && status.Code(err) != codes.NotFound {
		return ch, fmt.Errorf("deleting detached subscription: %w", err)
	}
	if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, want); err != nil {
		return ch, fmt.Errorf("creating it again: %w", err)
	}
	ch.Action = Recreated
	return ch, nil
}

// idOf is the id at the end of a resource name.
func idOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[i+1:]
		}
	}
	return name
}
