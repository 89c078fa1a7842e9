package projector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestStallIsReported: a projection holding messages but applying nothing
// for Options.StallAfter fails readiness ("stall/<projection>") and sets
// projector_stalled; both clear once it applies again.
func TestStallIsReported(t *testing.T) {
	t.Parallel()
	db, ps := relaytest.NewDB(t, relaytest.Options{Schema: "items"}), gpubsubtest.New(t)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	ps.Topic(t, "counters")
	ps.Topic(t, "counters.dlq")
	ps.Subscription(t, "counters.pg", "counters", gpubsubtest.SubscriptionOptions{Ordered: true})
	unblock := make(chan struct{})
	rows := projection.NewRegistry[projection.TxHandler]()
	if err := rows.Register(counterType(), projection.TxHandlerFunc(func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
		<-unblock // the read model's store hangs
		return applyTotal(ctx, tx, ev)
	})); err != nil {
		t.Fatal(err)
	}
	reg, h := prometheus.NewRegistry(), health.NewHealth(time.Second)
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: reg, Health: h, StallAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Register(projector.Projection{Name: "counters-pg", Subscription: "counters.pg", DeadLetterTopic: "counters.dlq",
		Tx: rows, Batching: projector.BatchOptions{Linger: time.Millisecond, Timeout: time.Minute}, Tables: []string{"order_totals"}}); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	defer func() { stop(); <-ran }()

	publish(t, ps, "counters", setEvent(t, "c1", 1, 10))
	eventually(t, "the stall reported", func() bool {
		rep := h.Ready(t.Context())
		return !rep.OK && strings.Contains(fmt.Sprint(rep.Failures), "applied nothing") &&
			opstest.Metric(t, reg, "projector_stalled", map[string]string{"projection": "counters-pg"}) == 1
	})
	close(unblock)
	eventually(t, "the stall cleared", func() bool {
		return h.Ready(t.Context()).OK && opstest.Metric(t, reg, "projector_stalled", map[string]string{"projection": "counters-pg"}) == 0
	})
}
