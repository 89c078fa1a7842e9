package gpubsub_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// TestFlushSendsWithoutWaitingForTheBundlingDelay checks that Flush sends
// what the library holds for bundling at once, in order, and that Stop
// after a Flush returns.
func TestFlushSendsWithoutWaitingForTheBundlingDelay(t *testing.T) {
	t.Parallel()
	srv := gpubsubtest.New(t)
	srv.Topic(t, "flush")
	settings := pubsub.DefaultPublishSettings
	settings.DelayThreshold = time.Hour // nothing leaves on its own
	settings.CountThreshold = 1000
	pubs := gpubsub.NewPublishers(srv.Client, settings)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var results []*pubsub.PublishResult
	for i := range 3 {
		results = append(results, pubs.Publish(ctx, "flush", &pubsub.Message{Data: []byte{byte('a' + i)}, OrderingKey: "k"}))
	}
	select {
	case <-results[0].Ready():
		_, err := results[0].Get(ctx)
		t.Fatalf("a message left before the flush and its hour-long bundling delay: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	pubs.Flush()
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	var got string
	for _, m := range srv.Messages() {
		got += string(m.Data)
	}
	if got != "abc" {
		t.Errorf("Pub/Sub holds %q, want \"abc\" (the order of the Publish calls)", got)
	}
	pubs.Stop()
	if _, err := pubs.Publish(ctx, "flush", &pubsub.Message{Data: []byte("late"), OrderingKey: "k"}).Get(ctx); err == nil {
		t.Error("Publish after Stop succeeded")
	}
	pubs.Flush() // after Stop: a no-op, not a panic
}
