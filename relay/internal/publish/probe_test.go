package publish

import (
	"context"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// Readiness needs only what a publisher granted roles on its topic holds:
// GetTopic on the topics it publishes to, never ListTopics on the project.
// Without pubsub.topics.get on such a topic, readiness fails naming it.
func TestPingNeedsOnlyTheTopicsOwnPermissions(t *testing.T) {
	const project, topic = "eventrelay-test", "events"
	srv := pstest.NewServer()
	t.Cleanup(func() { srv.Close() })
	if _, err := srv.GServer.CreateTopic(context.Background(), &pb.Topic{Name: gpubsub.TopicName(project, topic)}); err != nil {
		t.Fatal(err)
	}
	res := gpubsub.TopicName(project, topic)
	double, err := strict.Start(strict.Options{Upstream: srv.Addr, IAM: &strict.IAM{Bindings: []strict.Binding{
		{Member: "serviceAccount:viewer", Role: "roles/pubsub.publisher", Resource: res},
		{Member: "serviceAccount:viewer", Role: "roles/pubsub.viewer", Resource: res},
		{Member: "serviceAccount:publish-only", Role: "roles/pubsub.publisher", Resource: res},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(double.Close)
	publisherAs := func(member string, s Settings) *Publisher {
		addr, err := double.ListenAs(member)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := gpubsub.NewClient(context.Background(), gpubsub.Config{ProjectID: project, EmulatorHost: addr})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		p, stop := New(cl, s, nil)
		t.Cleanup(stop)
		return p
	}
	ctx := context.Background()

	// Nothing configured, nothing published: nothing to check.
	p := publisherAs("serviceAccount:viewer", Settings{MaxMessageBytes: 1 << 20})
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("ping with no topic known: %v", err)
	}
	// After a publish, its topic is probed.
	r, err := p.Publish(ctx, &claim.Event{Topic: topic, Payload: []byte("x"), EventID: uuid.New(), EventType: "t", OccurredAt: time.Now(), AggregateType: "a", AggregateID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("ping after publishing to %s: %v", topic, err)
	}
	// A routed topic is probed from the start; without pubsub.topics.get
	// on it readiness fails, classified permission_denied.
	q := publisherAs("serviceAccount:publish-only", Settings{Topics: map[string]string{"a": topic}})
	if err := q.Ping(ctx); errclass.Of(err) != errclass.PermissionDenied {
		t.Fatalf("ping without pubsub.topics.get: %v, want permission_denied", err)
	}
	for _, d := range double.Denials() {
		if d.Missing.Permission != "pubsub.topics.get" {
			t.Errorf("refused: %v (readiness must need no other permission)", d)
		}
	}
}
