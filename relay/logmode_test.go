package relay_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest"
)

// slotFor is a slot name of the test's own: slot names are cluster-wide
// and the tests' databases share a server.
func slotFor(t *testing.T) string {
	t.Helper()
	h := fnv.New32a()
	h.Write([]byte(t.Name()))
	return fmt.Sprintf("eventrelay_test_%08x", h.Sum32())
}

// logDB is a fresh database whose replication slots are dropped before
// it is (a database with a slot cannot be dropped). Relays started after
// it stop before the slots are dropped.
func logDB(t *testing.T) *relaytest.DB {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	t.Cleanup(func() {
		ctx := context.Background()
		for range 50 {
			_, err := db.Pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = current_database()`)
			if err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return db
}

// logConfig is a ModeLog relay's test configuration.
func logConfig(t *testing.T, worker string, ps *gpubsubtest.Server) fx.Config {
	cfg := fx.NewConfig(worker, ps.Config)
	cfg.Mode = relay.ModeLog
	cfg.Log = relay.LogOptions{Slot: slotFor(t), StandbyRetry: 200 * time.Millisecond, ConfirmInterval: 100 * time.Millisecond}
	return cfg
}

// slotConfirmed is the slot's confirmed position as text-comparable
// bytes (pg_lsn compared in SQL).
func slotPast(t *testing.T, db *relaytest.DB, lsn string) bool {
	t.Helper()
	var past bool
	err := db.Pool.QueryRow(context.Background(), `SELECT coalesce(bool_or(confirmed_flush_lsn >= $1::pg_lsn), false)
		FROM pg_replication_slots WHERE slot_name = $2`, lsn, slotFor(t)).Scan(&past)
	if err != nil {
		t.Fatal(err)
	}
	return past
}

func currentLSN(t *testing.T, db *relaytest.DB) string {
	t.Helper()
	var lsn string
	if err := db.Pool.QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

func count(t *testing.T, db *relaytest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// insertVersions writes versions from..to of aggregates 1..keys, version
// by version, perTx events per transaction.
func insertVersions(t *testing.T, db *relaytest.DB, w *outbox.Writer, keys int, from, to int64, perTx int) {
	t.Helper()
	var batch []outbox.Event
	for v := from; v <= to; v++ {
		for k := 1; k <= keys; k++ {
			batch = append(batch, fx.Item(fx.ID(k), v, 0))
			if len(batch) == perTx {
				fx.Insert(t, db.Pool, w, batch...)
				batch = nil
			}
		}
	}
	if len(batch) > 0 {
		fx.Insert(t, db.Pool, w, batch...)
	}
}

// requireGapless fails unless, per ordering key, the versions in order of
// first appearance are 1, 2, 3, ... (duplicates allowed).
func requireGapless(t *testing.T, ps *gpubsubtest.Server) {
	t.Helper()
	for key, vs := range fx.Collect(t, ps.Messages()).Versions {
		next := int64(1)
		for _, v := range vs {
			switch {
			case v == next:
				next++
			case v > next:
				t.Fatalf("key %s: version %d before %d: %v", key, v, next, vs)
			}
		}
	}
}

// readerState is the relay's outbox_log_reader state.
func readerState(t *testing.T, r *fx.Relay) string {
	t.Helper()
	for _, s := range []string{"active", "standby"} {
		if opstest.Metric(t, r.Registry, "outbox_log_reader", map[string]string{"state": s}) == 1 {
			return s
		}
	}
	return "none"
}

// readerAndStandby starts two relays on one slot of a fresh database,
// a (the reader) first, and writes versions 1 and 2 of five keys: once
// they are published, a reads and b waits as standby.
func readerAndStandby(t *testing.T) (*relaytest.DB, *gpubsubtest.Server, *outbox.Writer, *fx.Relay, *fx.Relay) {
	t.Helper()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 30*time.Second, "a reads", func() bool { return readerState(t, a) == "active" })
	b := fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	w := fx.Writer(t, false)
	insertVersions(t, db, w, 5, 1, 2, 5)
	fx.WaitFor(t, 60*time.Second, "the first events", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 10 })
	fx.WaitFor(t, 30*time.Second, "b waits", func() bool { return readerState(t, b) == "standby" })
	if sa := readerState(t, a); sa != "active" {
		t.Fatalf("reader states a=%s b=standby, want active and standby", sa)
	}
	return db, ps, w, a, b
}

// TestLogModeStandbyTakesOverTheSlot: of two relays on one slot, one
// reads and the other waits as standby; when the reader stops, the
// standby takes the slot over and publishes what follows, in order and
// with nothing lost. The takeover time is logged.
func TestLogModeStandbyTakesOverTheSlot(t *testing.T) {
	t.Parallel()
	db, ps, w, a, b := readerAndStandby(t)
	a.Stop(t)
	stopped := time.Now()
	insertVersions(t, db, w, 5, 3, 3, 5)
	fx.WaitFor(t, 60*time.Second, "b took over and published", func() bool {
		return readerState(t, b) == "active" && len(fx.Collect(t, ps.Messages()).Copies) == 15
	})
	t.Logf("the standby published the reader's next events %s after the reader stopped", time.Since(stopped).Round(time.Millisecond))
	fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 5, 3)
}

// TestLogModeLostSlotLosesNothing: the slot is dropped while no relay
// reads it (as an invalidation or a failover on Postgres < 17 loses it);
// the next reader republishes the rows not known to be published (from
// the horizon recorded in outbox_log_slots) and resumes from a new slot:
// every event first seen in order, duplicates allowed, none lost.
func TestLogModeLostSlotLosesNothing(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	w := fx.Writer(t, false)
	insertVersions(t, db, w, 8, 1, 3, 6)
	fx.WaitFor(t, 60*time.Second, "the first events and their horizon", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) == 24 &&
			count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND published_xmin IS NOT NULL AND NOT recovering`, slotFor(t)) == 1
	})
	a.Stop(t)
	insertVersions(t, db, w, 8, 4, 6, 5) // unread: lost with the slot
	ctx := context.Background()
	fx.WaitFor(t, 30*time.Second, "the slot dropped", func() bool {
		_, err := db.Pool.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slotFor(t))
		return err == nil
	})
	total := count(t, db, `SELECT count(*) FROM outbox_events`)
	b := fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	insertVersions(t, db, w, 8, 7, 7, 8) // after the new slot, or recovered
	// The counter follows the recovery's last page, after its publishes.
	fx.WaitFor(t, 60*time.Second, "every event and the recovery counted", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) == 56 && opstest.Metric(t, b.Registry, "outbox_log_recovered_rows_total", nil) > 0
	})
	dups := fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 8, 7)
	if n := opstest.Metric(t, b.Registry, "outbox_log_slots_created_total", nil); n != 1 {
		t.Fatalf("outbox_log_slots_created_total = %v, want 1", n)
	}
	recovered := opstest.Metric(t, b.Registry, "outbox_log_recovered_rows_total", nil)
	if recovered < 24 || recovered >= float64(total) {
		t.Fatalf("%v rows republished from the table, want the 24 unread and not all %d (the horizon bounds them)", recovered, total)
	}
	t.Logf("%d duplicates, %v rows republished after the slot was lost", dups, recovered)
}

// TestLogModeReadinessSaysWhyTheStreamCannotRun: a slot name taken in
// another database (slot names are cluster-wide) is never touched: the
// relay reports it in readiness check log_stream and publishes nothing.
func TestLogModeReadinessSaysWhyTheStreamCannotRun(t *testing.T) {
	t.Parallel()
	db, other := logDB(t), logDB(t)
	ctx := context.Background()
	if _, err := other.Pool.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, slotFor(t)); err != nil {
		t.Fatal(err)
	}
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	r := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))
	fx.WaitFor(t, 30*time.Second, "log_stream failing", func() bool {
		return strings.Contains(r.Health.Ready(ctx).Failures["log_stream"], "another database")
	})
	if n := len(ps.Messages()); n != 0 {
		t.Fatalf("%d messages published without a slot", n)
	}
	if n := count(t, other, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND database = current_database()`, slotFor(t)); n != 1 {
		t.Fatal("the other database's slot was touched")
	}
}

// TestLogModeRecoveryHeldByTheEnvironmentIsRepeated: the rows a new slot
// republishes from the table, held because their topic's declared
// subscription is missing, are published once it exists: a recovery that
// a hold cut short is not recorded as done.
func TestLogModeRecoveryHeldByTheEnvironmentIsRepeated(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	insertVersions(t, db, fx.Writer(t, false), 4, 1, 2, 3) // before the slot: recovered
	cfg := logConfig(t, "log-a", ps)
	cfg.Publish.Subscriptions = map[string][]string{fx.Topic: {"consumer"}}
	cfg.Publish.SubscriptionCheckInterval = 100 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	ctx := context.Background()
	fx.WaitFor(t, 30*time.Second, "held for the missing subscription", func() bool {
		return r.Health.Ready(ctx).Failures["subscriptions"] != ""
	})
	time.Sleep(time.Second) // sessions come and go while it is missing
	ps.Subscription(t, "consumer", fx.Topic, gpubsubtest.SubscriptionOptions{})
	fx.WaitFor(t, 60*time.Second, "the recovered rows published", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 8 })
	fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 4, 2)
}

// TestLogModeBacklogOfAKeySharesRequests: a backlog read from the slot
// in WAL order (version by version, so the keys interleave) is published
// in groups per key: at most 3 Publish requests per key for its 10
// versions (one message per request before), once each and in per-key
// order.
func TestLogModeBacklogOfAKeySharesRequests(t *testing.T) {
	t.Parallel()
	const keys, versions = 300, 10
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 30*time.Second, "the slot created", func() bool {
		return count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND NOT recovering`, slotFor(t)) == 1
	})
	a.Stop(t)
	insertVersions(t, db, fx.Writer(t, false), keys, 1, versions, 100) // read from the slot by the next reader
	time.Sleep(1500 * time.Millisecond)                                // a backlog: committed well before it is read
	fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	fx.WaitFor(t, 2*time.Minute, "the backlog published", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) >= keys*versions
	})
	fx.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, keys, versions)
	st := ps.Double.Stats()
	t.Logf("%d keys x %d versions from the slot: %v", keys, versions, st)
	if st.Refused != 0 {
		t.Fatalf("the strict double refused %d request(s): %v", st.Refused, st)
	}
	if limit := int64(3 * keys); st.PublishRequests > limit {
		t.Fatalf("%d Publish requests for %d keys with %d waiting versions each (%.2f messages per request), want at most %d: a key's waiting versions travel together",
			st.PublishRequests, keys, versions, float64(st.PublishMessages)/float64(st.PublishRequests), limit)
	}
}
