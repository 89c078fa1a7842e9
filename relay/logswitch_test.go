package relay_test

import (
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
)

// TestLogModeTakesOverFromThePollingRelay: a service switched from the
// polling relay to the log mode by a rolling release (both run for a
// while, then the polling relay stops) loses nothing and no key's events
// are first seen out of order; duplicates are allowed.
func TestLogModeTakesOverFromThePollingRelay(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	w := fx.Writer(t, false)
	poll := fx.StartRelay(t, db.Pool, fx.NewConfig("poll", ps.Config))
	insertVersions(t, db, w, 5, 1, 2, 5)
	fx.WaitFor(t, 60*time.Second, "the polling relay's events", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 10 })
	insertVersions(t, db, w, 5, 3, 3, 5) // pending or in flight at the switch
	log := fx.StartRelay(t, db.Pool, logConfig(t, "log", ps))
	insertVersions(t, db, w, 5, 4, 5, 5) // both relays run
	poll.Stop(t)
	insertVersions(t, db, w, 5, 6, 7, 5)
	fx.WaitFor(t, 60*time.Second, "every event", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 35 })
	dups := fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 5, 7)
	t.Logf("%d duplicates across the switch, %v rows republished by the log relay's first slot", dups,
		opstest.Metric(t, log.Registry, "outbox_log_recovered_rows_total", nil))
}
