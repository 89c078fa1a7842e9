package relay_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestLogModeStandbyIsReadyAfterItsSessionFailed: the reader's session
// ends on an error as Postgres ends its connections (the walsender and the
// reader lock's), and the other replica takes the slot over. The former
// reader, now a standby, reads no stream: its readiness must not keep
// reporting the stream its last session failed on.
func TestLogModeStandbyIsReadyAfterItsSessionFailed(t *testing.T) {
	t.Parallel()
	standbyAfterTakeover(t, nil)
}

// TestLogModeStandbyHoldsNoTopic: as above, while Pub/Sub refuses every
// publish (UNAVAILABLE), so the reader holds the topic when it loses the
// slot. Pub/Sub answers again and the new reader publishes: the standby,
// which publishes nothing, must not keep reporting the topic held.
func TestLogModeStandbyHoldsNoTopic(t *testing.T) {
	t.Parallel()
	outage := newFault(codes.Unavailable, fx.ID(1))
	standbyAfterTakeover(t, outage)
}

// standbyAfterTakeover: relays a then b on one slot; with outage, a holds
// the topic first (a row of key 1 refused) and the outage ends once b
// reads. a must end a ready standby.
func standbyAfterTakeover(t *testing.T, outage *keyFault) {
	db := logDB(t)
	var opts []pstest.ServerReactorOption
	if outage != nil {
		outage.on.Store(true)
		opts = append(opts, pstest.ServerReactorOption{FuncName: "Publish", Reactor: outage})
	}
	ps := gpubsubtest.New(t, opts...)
	ps.Topic(t, fx.Topic)
	ctx := context.Background()
	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 30*time.Second, "a reads", func() bool { return readerState(t, a) == "active" })
	if outage != nil {
		fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))
		fx.WaitFor(t, 60*time.Second, "a holding the topic", func() bool {
			return strings.Contains(a.Health.Ready(ctx).Failures["publish_blocked"], "held: topic")
		})
	}
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
		// (A reader holding the topic neither streams between its holds
		// nor finishes a recovery: its lock connection alone is ended.)
		fx.WaitFor(t, 30*time.Second, "the slot streamed", func() bool {
			return outage != nil || count(t, db, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)) == 1 &&
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
	if outage != nil {
		outage.on.Store(false)
		fx.WaitFor(t, 60*time.Second, "b publishing the held row", func() bool { return len(ps.Messages()) >= 1 })
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

// readerLockPid is the backend holding slot's reader lock (a session
// advisory lock keyed by the slot's name), 0 when none does.
func readerLockPid(t *testing.T, db *relaytest.DB, slot string) int {
	t.Helper()
	h := fnv.New64a()
	h.Write([]byte("eventrelay.logread." + slot))
	key := int64(h.Sum64())
	return count(t, db, `SELECT coalesce(max(pid), 0) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND ((classid::bigint << 32) | objid::bigint) = $1::bigint AND objsubid = 1`, key)
}

// TestLogModeReaderThatLostItsLockStops: only the reader lock's
// connection of the reader ends (its walsender lives on); the reader
// notices within its lock check, ends its session and releases the slot,
// and one relay (the standby, or the reader again) reads the slot: the
// events written after are all published, in order.
func TestLogModeReaderThatLostItsLockStops(t *testing.T) {
	t.Parallel()
	db, ps, w, a, b := readerAndStandby(t)

	ctx := context.Background()
	lock := readerLockPid(t, db, slotFor(t))
	walsender := count(t, db, `SELECT coalesce(max(active_pid), 0) FROM pg_replication_slots WHERE slot_name = $1`, slotFor(t))
	if lock == 0 || walsender == 0 || lock == walsender {
		t.Fatalf("reader lock backend %d, walsender %d: want two", lock, walsender)
	}
	if _, err := db.Pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, lock); err != nil {
		t.Fatal(err)
	}
	terminated := time.Now()
	// The reader that lost its lock must not read on: the walsender it
	// streamed from ends, and one reader holds both lock and slot again.
	fx.WaitFor(t, 30*time.Second, "the old walsender gone and one relay reading the slot under the lock", func() bool {
		now := count(t, db, `SELECT coalesce(max(active_pid), 0) FROM pg_replication_slots WHERE slot_name = $1`, slotFor(t))
		holder := readerLockPid(t, db, slotFor(t))
		return count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, walsender) == 0 &&
			now != 0 && holder != 0 && holder != lock
	})
	t.Logf("the slot was read under the reader lock again %s after the lock's connection ended", time.Since(terminated).Round(time.Millisecond))
	insertVersions(t, db, w, 5, 3, 3, 5)
	fx.WaitFor(t, 60*time.Second, "the events after", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) >= 15 })
	fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 5, 3)
	active := 0
	for _, r := range []*fx.Relay{a, b} {
		if readerState(t, r) == "active" {
			active++
		}
	}
	if active != 1 {
		t.Fatalf("%d relays read the slot, want 1", active)
	}
}
