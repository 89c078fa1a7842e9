package relay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
)

// TestLogModeStandbyIsReadyAfterItsSessionFailed: the reader's session
// ends on an error as Postgres ends its connections (the walsender and the
// reader lock's), and the other replica takes the slot over. The former
// reader, now a standby, reads no stream: its readiness must not keep
// reporting the stream its last session failed on.
func TestLogModeStandbyIsReadyAfterItsSessionFailed(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ctx := context.Background()
	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 30*time.Second, "a reads", func() bool { return readerState(t, a) == "active" })
	b := fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	fx.WaitFor(t, 30*time.Second, "b waits as standby", func() bool { return readerState(t, b) == "standby" })

	// End the reader's connections until b holds the slot (a may win the
	// lock back: then again).
	settled := func() (string, string) {
		for {
			sa, sb := readerState(t, a), readerState(t, b)
			time.Sleep(time.Second)
			if sa2, sb2 := readerState(t, a), readerState(t, b); sa == sa2 && sb == sb2 {
				return sa, sb
			}
		}
	}
	for round := 1; ; round++ {
		if round > 10 {
			t.Fatalf("b never took the slot over in 10 rounds")
		}
		// Streamed, not in a new slot's recovery (which holds no walsender
		// to end: that reader would go on without its lock).
		fx.WaitFor(t, 30*time.Second, "the slot streamed", func() bool {
			return count(t, db, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)) == 1 &&
				count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND NOT recovering`, slotFor(t)) == 1
		})
		if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			UNION ALL SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)); err != nil {
			t.Fatal(err)
		}
		var sa, sb string
		fx.WaitFor(t, 60*time.Second, "one reader and one standby", func() bool {
			sa, sb = settled()
			return sa == "active" && sb == "standby" || sb == "active" && sa == "standby"
		})
		if sb == "active" {
			break
		}
	}
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		rep := a.Health.Ready(ctx)
		state := readerState(t, a)
		if rep.OK && state == "standby" {
			break
		}
		last = fmt.Sprintf("a %s, readiness failures %v", state, rep.Failures)
		if time.Now().After(deadline) {
			t.Fatalf("the former reader is not a ready standby 30s after b took the slot over: %s", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
