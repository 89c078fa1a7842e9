package projector_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// TestStallIsReported: a projection holding messages but applying nothing
// for Options.StallAfter fails readiness ("stall/<projection>") and sets
// projector_stalled; both clear once it applies again.
func TestStallIsReported(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	unblock := make(chan struct{})
	hangs := projection.TxHandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
		<-unblock // the read model's store hangs
		return applyTotal(ctx, tx, ev)
	})
	reg, h := prometheus.NewRegistry(), health.NewHealth(time.Second)
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: reg, Health: h, StallAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	register(t, p, pgProjection(t, hangs, projector.BatchOptions{Linger: time.Millisecond, Timeout: time.Minute}))
	stop := run(t, p)
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	defer func() {
		release() // a failed test leaves no handler hanging
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()

	publish(t, ps, "counters", setEvent(t, "c1", 1, 10))
	eventually(t, "the stall reported", func() bool {
		rep := h.Ready(t.Context())
		return !rep.OK && strings.Contains(fmt.Sprint(rep.Failures), "applied nothing") &&
			opstest.Metric(t, reg, "projector_stalled", map[string]string{"projection": "counters-pg"}) == 1
	})
	release()
	eventually(t, "the stall cleared", func() bool {
		return h.Ready(t.Context()).OK && opstest.Metric(t, reg, "projector_stalled", map[string]string{"projection": "counters-pg"}) == 0
	})
}

// TestStallAfterOfANanosecondRuns: the shortest StallAfter still runs
// (the stall watch's tick stays positive) and applies what it receives.
func TestStallAfterOfANanosecondRuns(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	rowCalls := &calls{n: map[uuid.UUID]int{}}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: prometheus.NewRegistry(), Health: health.NewHealth(0), StallAfter: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	register(t, p, pgProjection(t, counterRows(rowCalls), projector.BatchOptions{Linger: time.Millisecond}))
	stop := run(t, p)
	ev := setEvent(t, "c1", 1, 10)
	publish(t, ps, "counters", ev)
	eventually(t, "c1 applied", func() bool { return rowCalls.of(ev.id) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
