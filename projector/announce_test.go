package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestProjectorAnnouncesAppliedVersions: a read waiting for a version on
// each read model (one Tx, one Batch projection; the service registers no
// announcing code, only a look-up per read model, here the inbox's) is
// woken when the projector applies that version, and a wait for a version
// never written times out.
func TestProjectorAnnouncesAppliedVersions(t *testing.T) {
	t.Parallel()
	db, ps := relaytest.NewDB(t, relaytest.Options{Schema: "items"}), gpubsubtest.New(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"counters", "counters.dlq-pg", "counters.dlq-idx"} {
		ps.Topic(t, topic)
	}
	ps.Subscription(t, "counters.pg", "counters", gpubsubtest.SubscriptionOptions{Ordered: true})
	ps.Subscription(t, "counters.idx", "counters", gpubsubtest.SubscriptionOptions{Ordered: true})
	rows := projection.NewRegistry[projection.TxHandler]()
	if err := rows.Register(counterType(), counterRows(&calls{n: map[uuid.UUID]int{}})); err != nil {
		t.Fatal(err)
	}
	idxReg := projection.NewRegistry[projection.BatchHandler]()
	if err := idxReg.Register(counterType(), &index{calls: &calls{n: map[uuid.UUID]int{}}, docs: map[string][2]int64{}}); err != nil {
		t.Fatal(err)
	}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: prometheus.NewRegistry(), Health: health.NewHealth(0)})
	if err != nil {
		t.Fatal(err)
	}
	batching := projector.BatchOptions{Linger: time.Millisecond, RetryBackoffMin: time.Millisecond}
	for _, pr := range []projector.Projection{
		{Name: "counters-pg", Subscription: "counters.pg", DeadLetterTopic: "counters.dlq-pg", Tx: rows, Batching: batching, Tables: []string{"order_totals"}},
		{Name: "counters-idx", Subscription: "counters.idx", DeadLetterTopic: "counters.dlq-idx", Batch: idxReg, Batching: batching},
	} {
		if err := p.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{DefaultWait: 20 * time.Second, MaxWait: 20 * time.Second})
	for _, model := range []string{"counters-pg", "counters-idx"} {
		w.Register(model, consistency.InboxLookup(db.Pool, model))
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	go w.Run(ctx)
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()

	tok := []consistency.Token{{AggregateType: "counter", AggregateID: "c9", Version: 1}}
	waited := make(chan error, 2)
	for _, model := range []string{"counters-pg", "counters-idx"} {
		go func() { waited <- w.Wait(t.Context(), model, tok, 0) }()
	}
	time.Sleep(100 * time.Millisecond) // the waits enrol and look up first
	publish(t, ps, "counters", setEvent(t, "c9", 1, 7))
	for range 2 {
		if err := <-waited; err != nil {
			t.Fatalf("waiting for an applied version: %v", err)
		}
	}
	never := []consistency.Token{{AggregateType: "counter", AggregateID: "c9", Version: 2}}
	if err := w.Wait(t.Context(), "counters-pg", never, 300*time.Millisecond); err == nil {
		t.Fatal("a wait for a version never written returned nil")
	}
}
