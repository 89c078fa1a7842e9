package bench

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	pubconfig "github.com/eventrelay/eventrelay/internal/publisher/config"
)

// publishLoop publishes evs to a fresh topic with message ordering on and
// the publisher's default bundling (configs: publish.delay_threshold and
// count_threshold), and waits for every result. It returns the time from
// the first Publish to the last result.
func publishLoop(ctx context.Context, b *Backend, evs []Event) (time.Duration, error) {
	topic, err := b.CreateTopic(ctx, "bench-ceiling")
	if err != nil {
		return 0, err
	}
	defer b.DeleteTopic(context.Background(), topic)
	p := b.Client.Publisher(topic)
	p.EnableMessageOrdering = true
	def := pubconfig.Default().Publish
	p.PublishSettings.DelayThreshold = def.DelayThreshold.D()
	p.PublishSettings.CountThreshold = def.CountThreshold
	defer p.Stop()
	msgs := make([]*pubsub.Message, len(evs))
	for i := range evs {
		msgs[i] = evs[i].Message()
	}
	results := make([]*pubsub.PublishResult, len(msgs))
	start := time.Now()
	for i, m := range msgs {
		results[i] = p.Publish(ctx, m)
	}
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			return 0, fmt.Errorf("%s: publishing message %d: %w", b.Name, i, gpubsub.Classify(err))
		}
	}
	return time.Since(start), nil
}

// fillSubscription publishes evs to topic (used to prepare the projector
// scenario; not measured).
func fillSubscription(ctx context.Context, b *Backend, topic string, evs []Event) error {
	p := b.Client.Publisher(topic)
	p.EnableMessageOrdering = true
	defer p.Stop()
	results := make([]*pubsub.PublishResult, len(evs))
	for i := range evs {
		results[i] = p.Publish(ctx, evs[i].Message())
	}
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			return fmt.Errorf("%s: publishing message %d: %w", b.Name, i, gpubsub.Classify(err))
		}
	}
	return nil
}
