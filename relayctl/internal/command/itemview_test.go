package command

import (
	"context"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// The tests' item_view projection: consumer item-view on subscription
// items.view of testdata/pubsub.yaml.
const (
	itemViewSubscription = "items.view"
	itemViewConsumer     = "item-view"
)

// startItemView runs a projector of item_view (itemViewHandler) on ps
// with options o until the test ends.
func startItemView(t *testing.T, ps *gpubsubtest.Server, db *testDB, o projector.Options) *projector.Projector {
	t.Helper()
	reg := projection.NewRegistry[projection.TxHandler]()
	for _, typ := range []string{testevent.TypeCreated, testevent.TypeUpdated, testevent.TypeDeleted} {
		if err := reg.Register(projection.EventType{Name: typ, SchemaVersions: []int32{1}, Decode: testevent.Decode}, itemViewHandler); err != nil {
			t.Fatal(err)
		}
	}
	p, err := projector.New(db.Pool, ps.Client, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Register(projector.Projection{
		Name: itemViewConsumer, Subscription: itemViewSubscription, DeadLetterTopic: "items.events.dlq-view", Tx: reg,
		Batching: projector.BatchOptions{Size: 10, Linger: 5 * time.Millisecond},
	}); err != nil {
		t.Fatal(err)
	}
	go p.Start(context.Background()) //nolint:errcheck // stopped when the test ends
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p
}
