package relay_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestStallIsReported: a relay owning the partitions of pending rows that
// publishes nothing for StallAfter (Pub/Sub stopped answering) reports it
// — readiness check "stall" fails naming the oldest row's age, and
// outbox_stalled is 1 — and both clear once rows publish again. An idle
// relay (nothing pending) does not report a stall.
func TestStallIsReported(t *testing.T) {
	t.Parallel()
	const stallAfter = time.Second
	var frozen atomic.Bool
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: reactorFunc(func(any) (bool, any, error) {
		for frozen.Load() {
			time.Sleep(20 * time.Millisecond)
		}
		return false, nil, nil
	})})
	t.Cleanup(func() { frozen.Store(false) })
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.StallAfter = stallAfter
	cfg.MaxAttempts = 1000 // the rows outlive the stall
	cfg.Publish.Timeout = 500 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)

	fx.WaitFor(t, 30*time.Second, "ready", func() bool { return r.Health.Ready(context.Background()).OK })
	time.Sleep(3 * stallAfter)
	if rep := r.Health.Ready(context.Background()); !rep.OK {
		t.Fatalf("idle relay not ready: %v", rep.Failures)
	}
	if n := opstest.Metric(t, r.Registry, "outbox_stalled", nil); n != 0 {
		t.Fatalf("idle relay: outbox_stalled = %v, want 0", n)
	}

	frozen.Store(true)
	fx.Insert(t, db.Pool, fx.Writer(t, true), fx.Item(fx.ID(1), 1, 0), fx.Item(fx.ID(2), 1, 0))
	var why string
	fx.WaitFor(t, 30*time.Second, `readiness check "stall" failing`, func() bool {
		why = r.Health.Ready(context.Background()).Failures["stall"]
		return why != ""
	})
	if !strings.Contains(why, "published nothing") || !strings.Contains(why, "oldest pending row") {
		t.Errorf("stall check says %q, want it to name what is wrong", why)
	}
	// The gauge follows the stats loop, which waits up to a minute after a
	// slow read on a busy machine (statsWait).
	fx.WaitFor(t, 90*time.Second, "outbox_stalled = 1", func() bool {
		return opstest.Metric(t, r.Registry, "outbox_stalled", nil) == 1
	})

	frozen.Store(false)
	fx.WaitFor(t, 30*time.Second, "rows published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 2 })
	fx.WaitFor(t, 90*time.Second, "stall cleared", func() bool {
		return r.Health.Ready(context.Background()).OK && opstest.Metric(t, r.Registry, "outbox_stalled", nil) == 0
	})
}
