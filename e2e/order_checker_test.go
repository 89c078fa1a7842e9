package e2e

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/settings"
)

// TestOrderCheckerCountsViolationsAndDuplicates publishes a known sequence
// through the fake (or, with E2E_PUBSUB_EMULATOR_HOST set, through a
// running emulator) and checks every count of the checker.
func TestOrderCheckerCountsViolationsAndDuplicates(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{})
	cfg := settings.PubSub{ProjectID: ps.ProjectID, EmulatorHost: ps.Addr}
	pubClient := ps.Client
	if host := os.Getenv("E2E_PUBSUB_EMULATOR_HOST"); host != "" {
		cfg = settings.PubSub{ProjectID: "eventrelay-checker", EmulatorHost: host}
		var err error
		if pubClient, err = embedded.NewPubSubClient(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		defer pubClient.Close()
	}
	topic := "checker-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := pubClient.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName(cfg.ProjectID, topic)}); err != nil {
		t.Fatal(err)
	}
	chk, err := NewOrderChecker(ctx, cfg, topic, topic+"-order")
	if err != nil {
		t.Fatal(err)
	}
	defer chk.Close()
	chk.Skip = func(m *pubsub.Message) bool { return m.Attributes["poison"] == "1" }
	if err := chk.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chk.Ensure(ctx); err != nil { // idempotent
		t.Fatalf("second Ensure: %v", err)
	}

	pub := pubClient.Publisher(topic)
	pub.EnableMessageOrdering = true
	defer pub.Stop()
	send := func(agg, event string, version int, extra map[string]string) {
		attrs := map[string]string{"event_id": event, "aggregate_type": "t", "aggregate_id": agg, "version": strconv.Itoa(version)}
		for k, v := range extra {
			attrs[k] = v
		}
		if _, err := pub.Publish(ctx, &pubsub.Message{Data: []byte("x"), OrderingKey: agg, Attributes: attrs}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	send("a", "a1", 1, nil)
	send("a", "a2", 2, nil)
	send("a", "a2", 2, nil) // duplicate publish: new message id, same event
	send("a", "a3", 3, nil)
	send("a", "a-stale", 2, nil) // a new event at an old version: violation
	send("b", "b1", 1, nil)
	send("b", "p", 0, map[string]string{"poison": "1"})
	send("b", "", 2, nil) // missing event_id

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { chk.Run(runCtx); close(done) }()
	want := OrderStats{Deliveries: 8, Events: 5, DuplicatePublishes: 1, Violations: 1, Skipped: 1, MissingAttrs: 1}
	for chk.Stats() != want && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	// Suspended (as across a Pub/Sub restart) and resumed, it receives what
	// was published meanwhile.
	chk.Suspend()
	send("b", "b3", 3, nil)
	chk.Resume()
	want.Deliveries, want.Events = 9, 6
	for chk.Stats() != want && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	<-done
	if got := chk.Stats(); got != want {
		t.Fatalf("stats = %+v, want %+v", got, want)
	}
	if v := chk.Violations(); len(v) != 1 {
		t.Fatalf("violations = %q, want one", v)
	}
}
