package projector_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
)

// TestProjectorAnnouncesAppliedVersions: a read waiting for a version on
// each read model (one Tx, one Batch projection; the service registers no
// announcing code, only a look-up per read model, here the inbox's) is
// woken when the projector applies that version, and a wait for a version
// never written times out.
func TestProjectorAnnouncesAppliedVersions(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: prometheus.NewRegistry(), Health: health.NewHealth(0)})
	if err != nil {
		t.Fatal(err)
	}
	batching := projector.BatchOptions{Linger: time.Millisecond, RetryBackoffMin: time.Millisecond}
	register(t, p, pgProjection(t, counterRows(&calls{n: map[uuid.UUID]int{}}), batching),
		idxProjection(t, &index{calls: &calls{n: map[uuid.UUID]int{}}, docs: map[string][2]int64{}}, batching))
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{DefaultWait: 20 * time.Second, MaxWait: 20 * time.Second})
	for _, model := range []string{"counters-pg", "counters-idx"} {
		w.Register(model, consistency.InboxLookup(db.Pool, model))
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go w.Run(ctx)
	stop := run(t, p)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()

	tok := []consistency.Token{{AggregateType: "counter", AggregateID: "c9", AggregateVersion: 1}}
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
	never := []consistency.Token{{AggregateType: "counter", AggregateID: "c9", AggregateVersion: 2}}
	if err := w.Wait(t.Context(), "counters-pg", never, 300*time.Millisecond); err == nil {
		t.Fatal("a wait for a version never written returned nil")
	}
}
