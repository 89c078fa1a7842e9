package bench

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"

	pubconfig "github.com/eventrelay/eventrelay/cmd/publisher/config"
)

// publishLoop is the Pub/Sub-side ceiling: the client library publishing
// msgs straight to topic with message ordering on and the publisher's
// default settings (publish.delay_threshold, count_threshold,
// max_inflight_requests, timeout), every message queued at once, then
// every result awaited. It returns the time from the first Publish to the
// last result. The ceilings run it in a child process (childPublish), so
// that its CPU is the library's alone.
func publishLoop(ctx context.Context, client *pubsub.Client, topic string, msgs []*pubsub.Message) (time.Duration, error) {
	def, s := pubconfig.Default().Publish, pubsub.DefaultPublishSettings
	s.DelayThreshold, s.CountThreshold, s.NumGoroutines, s.Timeout = def.DelayThreshold, def.CountThreshold, def.MaxInflightRequests, def.Timeout
	if def.DelayThresholdOff {
		s.DelayThreshold = 0
	}
	p := client.Publisher(topic)
	p.PublishSettings = s
	p.EnableMessageOrdering = true
	defer p.Stop()
	results := make([]*pubsub.PublishResult, len(msgs))
	start := time.Now()
	for i, m := range msgs {
		results[i] = p.Publish(ctx, m)
	}
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			return 0, fmt.Errorf("publishing message %d: %w", i, err)
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
			return fmt.Errorf("%s: publishing message %d: %w", b.Name, i, err)
		}
	}
	return nil
}
