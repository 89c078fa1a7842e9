package relay_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
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

// TestLogModePublishesCommittedInsertsInOrderWithoutWritingRows: the log
// relay publishes every committed insert once, in per-aggregate order with
// the aggregate as ordering key; a rolled-back insert never reaches
// Pub/Sub; no outbox row is written (no claim, lease or mark) and the
// slot is confirmed past the events once Pub/Sub acknowledged them.
func TestLogModePublishesCommittedInsertsInOrderWithoutWritingRows(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	r := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 30*time.Second, "the reader active", func() bool {
		return opstest.Metric(t, r.Registry, "outbox_log_reader", map[string]string{"state": "active"}) == 1 &&
			count(t, db, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)) == 1
	})

	w := fx.Writer(t, false)
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := w.InsertTx(ctx, tx, fx.Item("rolled-back", 1, 0)); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("the rolled-back transaction committed")
	}
	fx.InsertRounds(t, db.Pool, w, 1, 20, 5, 7)
	after := currentLSN(t, db)
	fx.WaitFor(t, 60*time.Second, "100 events published", func() bool { return len(ps.Messages()) >= 100 })
	fx.WaitFor(t, 30*time.Second, "the slot confirmed past the writes", func() bool { return slotPast(t, db, after) })
	time.Sleep(300 * time.Millisecond) // nothing more may arrive
	fx.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, 20, 5)
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status <> 'pending' OR attempts <> 0 OR lock_token IS NOT NULL`); n != 0 {
		t.Fatalf("%d outbox rows written by the log relay, want none", n)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_claims`); n != 0 {
		t.Fatalf("%d claims, want none", n)
	}
	fx.WaitFor(t, 30*time.Second, "the published horizon recorded", func() bool {
		return count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND published_xmin IS NOT NULL AND NOT recovering`, slotFor(t)) == 1
	})
	if rep := r.Health.Ready(ctx); !rep.OK {
		t.Fatalf("not ready: %+v", rep)
	}
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

// TestLogModeRepublishesAfterTheConfirmedPositionOnRestart: rows written
// before the first start (the polling relay's pending rows) and while no
// reader runs are published by the next reader, read again from the
// slot's confirmed position: at least once, in order, none lost.
func TestLogModeRepublishesAfterTheConfirmedPositionOnRestart(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	w := fx.Writer(t, false)
	insertVersions(t, db, w, 10, 1, 2, 5) // before any slot: pending rows

	a := fx.StartRelay(t, db.Pool, logConfig(t, "log-a", ps))
	fx.WaitFor(t, 60*time.Second, "the rows written before the first start", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) == 20
	})
	insertVersions(t, db, w, 10, 3, 4, 5)
	fx.WaitFor(t, 60*time.Second, "the rows written while reading", func() bool {
		return len(fx.Collect(t, ps.Messages()).Copies) == 40
	})
	a.Stop(t)
	insertVersions(t, db, w, 10, 5, 7, 4) // no reader
	b := fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	insertVersions(t, db, w, 10, 8, 8, 10)
	fx.WaitFor(t, 60*time.Second, "every row", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 80 })
	dups := fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 10, 8)
	t.Logf("%d duplicates across the restart", dups)
	if n := opstest.Metric(t, b.Registry, "outbox_log_slots_created_total", nil); n != 0 {
		t.Fatalf("the restarted reader created %v slots, want 0 (the slot survives a restart)", n)
	}
}
