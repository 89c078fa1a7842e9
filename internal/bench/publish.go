package bench

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	pubconfig "github.com/eventrelay/eventrelay/internal/publisher/config"
)

// publishLoop publishes evs to a fresh topic with the publisher daemon's
// own client path (gpubsub.OrderedPublisher: all ordering keys share
// requests) and default settings (publish.count_threshold,
// delay_threshold, timeout), and waits for every result. It returns the
// time from the first Publish to the last result.
func publishLoop(ctx context.Context, b *Backend, evs []Event) (time.Duration, error) {
	topic, err := b.CreateTopic(ctx, "bench-ceiling")
	if err != nil {
		return 0, err
	}
	defer b.DeleteTopic(context.Background(), topic)
	def := pubconfig.Default().Publish
	p := gpubsub.NewOrderedPublisher(b.Client, Project, gpubsub.OrderedPublisherSettings{
		MaxMessages: def.CountThreshold, Linger: def.DelayThreshold.D(), Timeout: def.Timeout.D(),
	})
	defer p.Stop()
	msgs := make([]*pubsub.Message, len(evs))
	for i := range evs {
		msgs[i] = evs[i].Message()
	}
	results := make([]*gpubsub.PublishResult, len(msgs))
	start := time.Now()
	for i, m := range msgs {
		results[i] = p.Publish(topic, m)
	}
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			return 0, fmt.Errorf("%s: publishing message %d: %w", b.Name, i, err)
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
