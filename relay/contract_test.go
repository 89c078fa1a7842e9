package relay_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest"
)

// The relay's contract, asserted by the same test bodies against both
// modes (forEachMode): what a mode does beyond it (the log mode writes no
// row, the polling relay marks each) is checked under m.log().

// relayMode is one way the relay finds committed rows, as a contract
// test runs it.
type relayMode struct{ mode relay.Mode }

// forEachMode runs body once per mode, as parallel subtests named after
// the mode.
func forEachMode(t *testing.T, body func(t *testing.T, m relayMode)) {
	t.Helper()
	for _, mode := range []relay.Mode{relay.ModePoll, relay.ModeLog} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			body(t, relayMode{mode: mode})
		})
	}
}

func (m relayMode) log() bool { return m.mode == relay.ModeLog }

// db is a fresh database for the mode (the log mode's slots are dropped
// before it is).
func (m relayMode) db(t *testing.T) *relaytest.DB {
	t.Helper()
	if m.log() {
		return logDB(t)
	}
	return relaytest.NewDB(t, relaytest.Options{Schema: "items"})
}

// setup is a fresh database for the mode and a Pub/Sub server with the
// test topic, whose Publish requests meet faults first.
func (m relayMode) setup(t *testing.T, faults ...pstest.Reactor) (*relaytest.DB, *gpubsubtest.Server) {
	t.Helper()
	var opts []pstest.ServerReactorOption
	for _, f := range faults {
		opts = append(opts, pstest.ServerReactorOption{FuncName: "Publish", Reactor: f})
	}
	ps := gpubsubtest.New(t, opts...)
	ps.Topic(t, fx.Topic)
	return m.db(t), ps
}

// config is a relay's test configuration in the mode.
func (m relayMode) config(t *testing.T, worker string, ps *gpubsubtest.Server) fx.Config {
	t.Helper()
	if m.log() {
		return logConfig(t, worker, ps)
	}
	return fx.NewConfig(worker, ps.Config)
}

// writer is the writer a service of the mode uses: the polling relay is
// woken by NOTIFY, the log mode needs none.
func (m relayMode) writer(t *testing.T) *outbox.Writer { return fx.Writer(t, !m.log()) }

// caughtUp reports whether the relay is done with everything committed
// before lsn: the log mode's slot is confirmed past it; the polling relay
// marks each row as Pub/Sub acknowledges it, so the messages say it all.
func (m relayMode) caughtUp(t *testing.T, db *relaytest.DB, lsn string) bool {
	t.Helper()
	return !m.log() || slotPast(t, db, lsn)
}

// TestContractPublishesCommittedEventsOnceInOrder: every committed event
// is published once, in per-aggregate order with the aggregate as
// ordering key; a rolled-back insert never reaches Pub/Sub. The polling
// relay marks each row published; the log relay writes no outbox row (no
// claim, lease or mark), confirms the slot past the events once Pub/Sub
// acknowledged them and records the published horizon.
func TestContractPublishesCommittedEventsOnceInOrder(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		db, ps := m.setup(t)
		r := fx.StartRelay(t, db.Pool, m.config(t, "relay-a", ps))
		if m.log() { // streaming, not republishing from the table as a new slot does
			fx.WaitFor(t, 30*time.Second, "the reader active", func() bool {
				return opstest.Metric(t, r.Registry, "outbox_log_reader", map[string]string{"state": "active"}) == 1 &&
					count(t, db, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, slotFor(t)) == 1
			})
		}

		w := m.writer(t)
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
		fx.WaitFor(t, 30*time.Second, "the relay caught up", func() bool { return m.caughtUp(t, db, after) })
		time.Sleep(300 * time.Millisecond) // nothing more may arrive
		fx.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, 20, 5)
		if !m.log() {
			fx.WaitFor(t, 30*time.Second, "every row marked published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 100 })
		} else {
			if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status <> 'pending' OR attempts <> 0 OR lock_token IS NOT NULL`); n != 0 {
				t.Fatalf("%d outbox rows written by the log relay, want none", n)
			}
			if n := count(t, db, `SELECT count(*) FROM outbox_claims`); n != 0 {
				t.Fatalf("%d claims, want none", n)
			}
			fx.WaitFor(t, 30*time.Second, "the published horizon recorded", func() bool {
				return count(t, db, `SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND published_xmin IS NOT NULL AND NOT recovering`, slotFor(t)) == 1
			})
		}
		if rep := r.Health.Ready(ctx); !rep.OK {
			t.Fatalf("not ready: %+v", rep)
		}
	})
}

// TestContractPublishesAtLeastOnceAcrossARestart: rows written before the
// first start and while no relay runs are published by the next relay
// (the log mode reads them again from the slot's confirmed position, and
// keeps its slot across the restart): at least once, in order, none lost.
func TestContractPublishesAtLeastOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		db, ps := m.setup(t)
		w := m.writer(t)
		insertVersions(t, db, w, 10, 1, 2, 5) // before the first start

		a := fx.StartRelay(t, db.Pool, m.config(t, "relay-a", ps))
		fx.WaitFor(t, 60*time.Second, "the rows written before the first start", func() bool {
			return len(fx.Collect(t, ps.Messages()).Copies) == 20
		})
		insertVersions(t, db, w, 10, 3, 4, 5)
		fx.WaitFor(t, 60*time.Second, "the rows written while running", func() bool {
			return len(fx.Collect(t, ps.Messages()).Copies) == 40
		})
		a.Stop(t)
		insertVersions(t, db, w, 10, 5, 7, 4) // no relay
		b := fx.StartRelay(t, db.Pool, m.config(t, "relay-b", ps))
		insertVersions(t, db, w, 10, 8, 8, 10)
		fx.WaitFor(t, 60*time.Second, "every row", func() bool { return len(fx.Collect(t, ps.Messages()).Copies) == 80 })
		dups := fx.Collect(t, ps.Messages()).RequireFirstSeenInOrder(t, 10, 8)
		t.Logf("%d duplicates across the restart", dups)
		if m.log() {
			if n := opstest.Metric(t, b.Registry, "outbox_log_slots_created_total", nil); n != 0 {
				t.Fatalf("the restarted reader created %v slots, want 0 (the slot survives a restart)", n)
			}
		}
	})
}

// TestContractOwnFaultFailsTheRowAndHoldsItsKey: a message over the size
// limit fails its row with message_too_large (no attempt spent), one
// Pub/Sub refuses as INVALID_ARGUMENT fails with payload_invalid after
// its one attempt (never retried); the later versions of their keys are
// never published and stay pending behind them, also after a restart;
// the other keys move on.
func TestContractOwnFaultFailsTheRowAndHoldsItsKey(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		large, invalid := fx.ID(99), fx.ID(98)
		fault := newFault(codes.InvalidArgument, invalid)
		db, ps := m.setup(t, fault)
		cfg := m.config(t, "relay-a", ps)
		cfg.Publish.MaxMessageBytes = 4000
		a := fx.StartRelay(t, db.Pool, cfg)
		w := m.writer(t)
		fx.Insert(t, db.Pool, w, fx.Item(large, 1, 0))
		fx.Insert(t, db.Pool, w, fx.Item(large, 2, 5000), fx.Item(fx.ID(50), 1, 0), fx.Item(invalid, 1, 0))
		fx.Insert(t, db.Pool, w, fx.Item(large, 3, 0), fx.Item(invalid, 2, 0))
		insertVersions(t, db, w, 5, 1, 2, 5)
		after := currentLSN(t, db)
		fx.WaitFor(t, 60*time.Second, "the other keys published and both rows failed", func() bool {
			return len(fx.Collect(t, ps.Messages()).Copies) == 1+1+10 && fx.CountStatus(t, db.Pool, "failed") == 2 &&
				m.caughtUp(t, db, after)
		})
		check := func(r *fx.Relay) {
			t.Helper()
			for _, c := range []struct {
				key, reason string
				failed      int
				attempts    int32
			}{{large, "message_too_large", 1, 0}, {invalid, "payload_invalid", 0, 1}} {
				rs := rowsOf(t, db, c.key)
				f := rs[c.failed]
				if f.Status != "failed" || f.Reason == nil || *f.Reason != c.reason || f.Attempts != c.attempts {
					t.Fatalf("the failed row of %s = %+v, want failed %s after %d attempts", c.key, f, c.reason, c.attempts)
				}
				for _, later := range rs[c.failed+1:] {
					if later.Status != "pending" || later.Attempts != 0 {
						t.Fatalf("a row behind the %s row = %+v, want pending untouched", c.reason, later)
					}
				}
				if r != nil {
					if n := opstest.Metric(t, r.Registry, "outbox_terminal_failed_total", map[string]string{"reason": c.reason}); n != 1 {
						t.Fatalf("outbox_terminal_failed_total{reason=%s} = %v, want 1", c.reason, n)
					}
				}
			}
			if got := publishedVersions(t, ps, large); len(got) != 1 || got[0] != 1 {
				t.Fatalf("the failed key published versions %v, want [1]", got)
			}
			if got := publishedVersions(t, ps, invalid); len(got) != 0 {
				t.Fatalf("the refused key published versions %v, want none", got)
			}
		}
		check(a)
		// Never retried: one request (of this key alone, as Cloud Pub/Sub
		// requires) carried it.
		if n := fault.hits.Load(); n != 1 {
			t.Fatalf("INVALID_ARGUMENT key reached Pub/Sub in %d requests, want 1 (never retried)", n)
		}
		if !m.log() {
			// The gauges refresh every StatsInterval, or up to statsMaxWait
			// (a minute) after a slow read: the budget covers the longest wait.
			fx.WaitFor(t, 3*time.Minute, "failed gauge", func() bool {
				return opstest.Metric(t, a.Registry, "outbox_failed_events", nil) == 2
			})
		}
		a.Stop(t)
		fx.Insert(t, db.Pool, w, fx.Item(large, 4, 0), fx.Item(fx.ID(1), 3, 0))
		fx.StartRelay(t, db.Pool, m.config(t, "relay-b", ps))
		fx.WaitFor(t, 60*time.Second, "the other key's next version after the restart", func() bool {
			return len(publishedVersions(t, ps, fx.ID(1))) >= 3
		})
		time.Sleep(300 * time.Millisecond)
		check(nil)
		requireGapless(t, ps)
	})
}

// TestContractEnvironmentHoldsWithoutFailingRows: Pub/Sub unavailable for
// one key, then a topic that does not exist, then a permission refused,
// hold the work without failing a row or spending an attempt: readiness
// reports publish_blocked with the reason; when the cause clears every
// event is published in order. The log mode holds its whole stream (the
// slot is not confirmed past the held event, and what was read beside it
// is read and published again); the polling relay holds the topic.
func TestContractEnvironmentHoldsWithoutFailingRows(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		down, denied := fx.ID(7), fx.ID(8)
		unavailable, refused := newFault(codes.Unavailable, down), newFault(codes.PermissionDenied, denied)
		refused.on.Store(false)
		db, ps := m.setup(t, unavailable, refused)
		cfg := m.config(t, "relay-a", ps)
		cfg.MaxAttempts = 3 // environmental failures never count towards it
		r := fx.StartRelay(t, db.Pool, cfg)
		w := m.writer(t)
		ctx := context.Background()

		// The client retries UNAVAILABLE within Publish.Timeout: the hold
		// says timeout or unavailable.
		held := func(reason string, or ...string) {
			t.Helper()
			before := currentLSN(t, db)
			fx.WaitFor(t, 60*time.Second, "publish_blocked "+reason, func() bool {
				rep := r.Health.Ready(ctx)
				for _, want := range append(or, reason) {
					if !rep.OK && strings.Contains(rep.Failures["publish_blocked"], want) {
						return true
					}
				}
				return false
			})
			time.Sleep(time.Second) // a few confirmations and retries
			if m.log() && slotPast(t, db, before) {
				t.Fatalf("the slot was confirmed past a held event (%s)", reason)
			}
			if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed' OR attempts <> 0`); n != 0 {
				t.Fatalf("%d rows failed or spent an attempt while %s held them, want none", n, reason)
			}
		}

		fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 1, 0))
		// Live (in the log mode: streamed, not republished from the table
		// as a new slot does).
		fx.WaitFor(t, 60*time.Second, "the first event", func() bool { return len(ps.Messages()) == 1 })
		fx.Insert(t, db.Pool, w, fx.Item(down, 1, 0), fx.Item(fx.ID(1), 2, 0))
		fx.Insert(t, db.Pool, w, fx.Item(down, 2, 0), fx.Item(fx.ID(1), 3, 0))
		held("unavailable", "timeout")
		unavailable.on.Store(false)
		after := currentLSN(t, db)
		fx.WaitFor(t, 60*time.Second, "published once Pub/Sub answers", func() bool {
			return len(publishedVersions(t, ps, down)) >= 2 && len(publishedVersions(t, ps, fx.ID(1))) >= 3 && m.caughtUp(t, db, after)
		})
		fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(ctx).OK })
		if m.log() {
			// The sessions after the hold read again from the slot's
			// confirmed position: the other key's version sent beside the
			// held event is published again (at least once).
			if got := publishedVersions(t, ps, fx.ID(1)); len(got) < 4 {
				t.Fatalf("key 1 published %v: its version 2, behind the hold's confirmed position, was not read again", got)
			}
		}

		const gone = "not-yet"
		missing := fx.Item(fx.ID(2), 1, 0)
		missing.Topic = gone
		fx.Insert(t, db.Pool, w, missing)
		fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 4, 0))
		held("topic_not_found")
		if n := opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": gone, "reason": "topic_not_found"}); n != 1 {
			t.Errorf(`outbox_publish_blocked{topic=%q,reason="topic_not_found"} = %v, want 1`, gone, n)
		}
		ps.Topic(t, gone)
		after = currentLSN(t, db)
		fx.WaitFor(t, 60*time.Second, "published once the topic exists", func() bool {
			return len(publishedVersions(t, ps, fx.ID(2))) >= 1 && len(publishedVersions(t, ps, fx.ID(1))) >= 4 && m.caughtUp(t, db, after)
		})

		refused.on.Store(true)
		fx.Insert(t, db.Pool, w, fx.Item(denied, 1, 0))
		fx.Insert(t, db.Pool, w, fx.Item(denied, 2, 0), fx.Item(fx.ID(1), 5, 0))
		held("permission_denied")
		refused.on.Store(false)
		after = currentLSN(t, db)
		fx.WaitFor(t, 60*time.Second, "published once permitted", func() bool {
			return len(publishedVersions(t, ps, denied)) >= 2 && len(publishedVersions(t, ps, fx.ID(1))) >= 5 && m.caughtUp(t, db, after)
		})
		fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(ctx).OK })
		if n := opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": gone, "reason": "topic_not_found"}); n != 0 {
			t.Errorf("outbox_publish_blocked after the topic was created = %v, want 0", n)
		}
		requireGapless(t, ps)
	})
}

// TestContractReplayRepublishes: relayctl replay --include-published (its
// queries: SelectOutboxRows and ReplayOutboxRows with 'published')
// selects the published rows (in the log mode, which leaves them
// pending: those below every slot's published horizon), not a row held
// behind a failed row of its key, and the relay publishes the replayed
// rows again in order.
func TestContractReplayRepublishes(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		db, ps := m.setup(t)
		ctx := context.Background()
		cfg := m.config(t, "relay-a", ps)
		cfg.Publish.MaxMessageBytes = 4000
		fx.StartRelay(t, db.Pool, cfg)
		w := m.writer(t)
		done, held := fx.ID(1), fx.ID(2)
		fx.Insert(t, db.Pool, w, fx.Item(done, 1, 0), fx.Item(held, 1, 5000))
		fx.Insert(t, db.Pool, w, fx.Item(done, 2, 0), fx.Item(held, 2, 0))
		published := func() []outboxdb.SelectOutboxRowsRow {
			rows, err := outboxdb.New(db.Pool).SelectOutboxRows(ctx, outboxdb.SelectOutboxRowsParams{
				Statuses: []string{"published"}, RowIds: []int64{}, EventIds: []uuid.UUID{}, RowLimit: 100})
			if err != nil {
				t.Fatal(err)
			}
			return rows
		}
		fx.WaitFor(t, 60*time.Second, "the published rows selected", func() bool { return len(published()) == 2 })
		want := "published"
		if m.log() {
			want = "pending"
		}
		for _, r := range published() {
			if r.AggregateID != done || r.Status != want {
				t.Fatalf("selected as published: %s v%d (%s), want only %s's rows (%s)", r.AggregateID, r.AggregateVersion, r.Status, done, want)
			}
		}
		if got := publishedVersions(t, ps, done); len(got) != 2 {
			t.Fatalf("%s published %v before the replay, want 1, 2", done, got)
		}

		var moved int
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			q := outboxdb.New(tx)
			rows, err := q.SelectOutboxRows(ctx, outboxdb.SelectOutboxRowsParams{
				Statuses: []string{"published"}, RowIds: []int64{}, EventIds: []uuid.UUID{}, RowLimit: 100})
			if err != nil {
				return err
			}
			ids := make([]int64, len(rows))
			for i, r := range rows {
				ids[i] = r.ID
			}
			upd, err := q.ReplayOutboxRows(ctx, outboxdb.ReplayOutboxRowsParams{Ids: ids, Statuses: []string{"published"}})
			moved = len(upd)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if moved != 2 {
			t.Fatalf("replay moved %d rows, want 2", moved)
		}
		fx.WaitFor(t, 60*time.Second, "the replayed rows published again", func() bool { return len(publishedVersions(t, ps, done)) >= 4 })
		time.Sleep(500 * time.Millisecond) // nothing more may arrive
		if got := publishedVersions(t, ps, done); !slices.Equal(got, []int64{1, 2, 1, 2}) {
			t.Fatalf("%s published %v, want 1, 2 then the replay's 1, 2", done, got)
		}
		if got := publishedVersions(t, ps, held); len(got) != 0 {
			t.Fatalf("%s published %v: its rows wait behind the failed row", held, got)
		}
	})
}

// TestContractRetentionNeverDeletesAnUnpublishedRow: retention deletes
// published rows (in the log mode, which leaves them pending: those
// below the slot's published horizon) and never one Pub/Sub has not
// acknowledged: not while a Pub/Sub outage holds it (the log mode holds
// its whole stream: no row is deleted then), never a failed row or the
// rows its key holds behind it; once the outage ends, every other row is
// deleted.
func TestContractRetentionNeverDeletesAnUnpublishedRow(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, m relayMode) {
		down := fx.ID(7)
		fault := newFault(codes.Unavailable, down)
		db, ps := m.setup(t, fault)
		cfg := m.config(t, "relay-a", ps)
		cfg.Publish.MaxMessageBytes = 4000
		cfg.Retention = time.Millisecond
		cfg.RetentionInterval = 100 * time.Millisecond
		fx.StartRelay(t, db.Pool, cfg)
		w := m.writer(t)
		large := fx.ID(99)
		fx.Insert(t, db.Pool, w, fx.Item(large, 1, 5000), fx.Item(fx.ID(1), 1, 0))
		fx.Insert(t, db.Pool, w, fx.Item(large, 2, 0))
		insertVersions(t, db, w, 5, 2, 3, 5)
		fx.WaitFor(t, 60*time.Second, "the first rows deleted", func() bool {
			return count(t, db, `SELECT count(*) FROM outbox_events`) == 2 // the failed row and the one behind it
		})
		fx.Insert(t, db.Pool, w, fx.Item(down, 1, 0), fx.Item(fx.ID(1), 4, 0))
		fx.Insert(t, db.Pool, w, fx.Item(fx.ID(2), 4, 0))
		written := eventIDs(t, db)

		// requireDeletedPublished fails when a deleted row's event never
		// reached Pub/Sub.
		requireDeletedPublished := func() {
			t.Helper()
			published := map[string]bool{}
			for _, m := range ps.Messages() {
				published[m.Attributes["event_id"]] = true
			}
			left := eventIDs(t, db)
			for id, ev := range written {
				if _, ok := left[id]; !ok && !published[ev.String()] {
					t.Fatalf("row %d (event %s) deleted before it was published", id, ev)
				}
			}
		}
		deadline := time.Now().Add(2 * time.Second) // many retention rounds while held
		for time.Now().Before(deadline) {
			requireDeletedPublished()
			time.Sleep(100 * time.Millisecond)
		}
		if n := count(t, db, `SELECT count(*) FROM outbox_events`); m.log() && n != len(written) {
			t.Fatalf("%d of %d rows left while the stream was held, want all (none is confirmed)", n, len(written))
		}
		if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1`, down); n != 1 {
			t.Fatalf("%d rows of the held key left, want its 1", n)
		}
		fault.on.Store(false)
		fx.WaitFor(t, 60*time.Second, "the held rows deleted once published", func() bool {
			requireDeletedPublished()
			return count(t, db, `SELECT count(*) FROM outbox_events`) == 2
		})
		if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1`, large); n != 2 {
			t.Fatalf("%d rows of the failed key left, want its failed row and the one behind it", n)
		}
	})
}

// eventIDs are the event ids of the outbox's rows, by row id.
func eventIDs(t *testing.T, db *relaytest.DB) map[int64]uuid.UUID {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT id, event_id FROM outbox_events`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]uuid.UUID{}
	var id int64
	var ev uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&id, &ev}, func() error { out[id] = ev; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}
