package upkeep_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
	"github.com/eventrelay/eventrelay/relaytest"
)

const (
	pendingIdx    = "outbox_events_pending_idx"
	pendingKeyIdx = "outbox_events_pending_key_idx"
)

func indexStats(t *testing.T, s *upkeep.Store) map[string]upkeep.IndexStat {
	t.Helper()
	m := map[string]upkeep.IndexStat{}
	for _, st := range indexList(t, s) {
		m[st.Name] = st
	}
	return m
}

func indexList(t *testing.T, s *upkeep.Store) []upkeep.IndexStat {
	t.Helper()
	stats, err := s.OutboxIndexes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

func invalidIndexes(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	names, err := outboxdb.New(pool).InvalidOutboxIndexes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// holdSnapshot opens a REPEATABLE READ transaction that holds a snapshot
// (and no lock): REINDEX CONCURRENTLY waits for it before it validates
// the new index, ahead of the swap.
func holdSnapshot(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.BeginTx(ctxT(t), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctxT(t), `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	return tx
}

// waitingReindex waits until a REINDEX CONCURRENTLY of this database waits
// for a lock (the snapshot of holdSnapshot) and returns its backend.
func waitingReindex(t *testing.T, pool *pgxpool.Pool) int32 {
	t.Helper()
	ctx := ctxT(t)
	for {
		var pid int32
		err := pool.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'REINDEX INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'`).Scan(&pid)
		if err == nil {
			return pid
		}
		if err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("no REINDEX CONCURRENTLY ever waited for the open snapshot")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRebuildShrinksTheBloatedPendingIndexesOnly: after a drained wave the
// pending indexes keep the pages of the whole wave and hold nothing; the
// estimate finds them (and only them) bloated, and the rebuild shrinks
// them. The others, whose rows are live, are left alone.
func TestRebuildShrinksTheBloatedPendingIndexesOnly(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := upkeep.NewStore(db.Pool)
	fx.PublishedWave(t, db.Pool, 20_000, time.Now())

	list := indexList(t, s)
	if len(list) != len(upkeep.OutboxIndexNames) {
		t.Fatalf("stats of %d indexes, want the %d outbox indexes: %+v", len(list), len(upkeep.OutboxIndexNames), list)
	}
	before := indexStats(t, s)
	var names []string
	for _, st := range (upkeep.IndexUpkeep{BloatFactor: 4}).Bloated(list) {
		names = append(names, st.Name)
	}
	if !slices.Equal(names, []string{pendingIdx, pendingKeyIdx}) {
		t.Fatalf("bloated indexes = %v, want the two pending ones; stats %+v", names, before)
	}
	healthy := fx.IndexOID(t, db.Pool, "outbox_events_pkey")

	locked, done, err := s.RebuildIndexes(ctxT(t), names)
	if err != nil || !locked || len(done) != 2 {
		t.Fatalf("rebuild: locked %v, done %+v, err %v", locked, done, err)
	}
	after := indexStats(t, s)
	for _, d := range done {
		b := before[d.Name]
		if d.Err != nil || d.Before != b.Bytes || d.After > b.Bytes/20 || after[d.Name].Bytes != d.After {
			t.Errorf("%s: rebuild %+v; size before %d, now %d: want it under 1/20 of before", d.Name, d, b.Bytes, after[d.Name].Bytes)
		}
		if f := after[d.Name].Bloat(); f > 2 {
			t.Errorf("%s: bloat %.1f after the rebuild, want <= 2 (%+v)", d.Name, f, after[d.Name])
		}
	}
	if fx.IndexOID(t, db.Pool, "outbox_events_pkey") != healthy || after["outbox_events_pkey"].Bytes != before["outbox_events_pkey"].Bytes {
		t.Error("outbox_events_pkey was rebuilt; it was not asked for")
	}
	if inv := invalidIndexes(t, db.Pool); len(inv) != 0 {
		t.Errorf("invalid indexes left: %v", inv)
	}
}

// TestRebuildSkipsWhileAnotherSessionHoldsTheLock: one replica rebuilds
// at a time; the others skip the round.
func TestRebuildSkipsWhileAnotherSessionHoldsTheLock(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := upkeep.NewStore(db.Pool)
	conn, err := db.Pool.Acquire(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if ok, err := outboxdb.New(conn).TryLockOutboxMaintenance(ctxT(t)); err != nil || !ok {
		t.Fatalf("taking the lock: %v %v", ok, err)
	}
	oid := fx.IndexOID(t, db.Pool, pendingIdx)
	locked, done, err := s.RebuildIndexes(ctxT(t), []string{pendingIdx})
	if err != nil || locked || len(done) != 0 || fx.IndexOID(t, db.Pool, pendingIdx) != oid {
		t.Fatalf("rebuild under another session's lock: locked %v, done %+v, err %v; want a skip", locked, done, err)
	}
	if ok, err := outboxdb.New(conn).UnlockOutboxMaintenance(ctxT(t)); err != nil || !ok {
		t.Fatalf("releasing the lock: %v %v", ok, err)
	}
	if locked, done, err := s.RebuildIndexes(ctxT(t), []string{pendingIdx}); err != nil || !locked || len(done) != 1 || done[0].Err != nil {
		t.Fatalf("rebuild once the lock is free: locked %v, done %+v, err %v", locked, done, err)
	}
	if _, _, err := s.RebuildIndexes(ctxT(t), []string{"items_pkey"}); err == nil {
		t.Fatal("rebuilding an index outside the outbox list was accepted")
	}
}

// TestRebuildDropsTheLeftoverOfAnInterruptedRebuild: a REINDEX
// CONCURRENTLY canceled while it waits leaves an invalid <name>_ccnew
// (_ccold when canceled after the swap); the next rebuild drops it before
// rebuilding. Without that, every interrupted round would add one more.
func TestRebuildDropsTheLeftoverOfAnInterruptedRebuild(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := upkeep.NewStore(db.Pool)
	fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))

	snapshot := holdSnapshot(t, db.Pool)
	failed := make(chan error, 1)
	go func() {
		_, err := db.Pool.Exec(ctxT(t), `REINDEX INDEX CONCURRENTLY `+pendingIdx)
		failed <- err
	}()
	// Canceled on the server: a canceled context only closes the client's
	// connection, and the backend would go on with the REINDEX.
	pid := waitingReindex(t, db.Pool)
	if _, err := db.Pool.Exec(ctxT(t), `SELECT pg_cancel_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	if err := <-failed; err == nil {
		t.Fatal("the canceled REINDEX succeeded")
	}
	if err := snapshot.Rollback(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if inv := invalidIndexes(t, db.Pool); !slices.Equal(inv, []string{pendingIdx + "_ccnew"}) {
		t.Fatalf("invalid indexes after the interrupted rebuild = %v, want [%s_ccnew]", inv, pendingIdx)
	}

	locked, done, err := s.RebuildIndexes(ctxT(t), []string{pendingIdx})
	if err != nil || !locked || len(done) != 1 || done[0].Err != nil {
		t.Fatalf("rebuild: locked %v, done %+v, err %v", locked, done, err)
	}
	if inv := invalidIndexes(t, db.Pool); len(inv) != 0 {
		t.Fatalf("invalid indexes after the rebuild = %v, want none", inv)
	}
	if _, ok := indexStats(t, s)[pendingIdx]; !ok {
		t.Fatalf("%s is gone or invalid after the rebuild", pendingIdx)
	}
}

// TestClaimsKeepWorkingDuringARebuild: while a rebuild is held up (by an
// open snapshot), rows are inserted, claimed and marked published.
func TestClaimsKeepWorkingDuringARebuild(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := upkeep.NewStore(db.Pool)
	w := fx.Writer(t, false)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 1, 0))
	oid := fx.IndexOID(t, db.Pool, pendingIdx)

	snapshot := holdSnapshot(t, db.Pool)
	type result struct {
		locked bool
		done   []upkeep.Rebuild
		err    error
	}
	rebuilt := make(chan result, 1)
	go func() {
		locked, done, err := s.RebuildIndexes(ctxT(t), []string{pendingIdx})
		rebuilt <- result{locked, done, err}
	}()
	waitingReindex(t, db.Pool)

	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1), 2, 0), fx.Item(fx.ID(2), 1, 0))
	cs := claim.NewStore(db.Pool)
	tok := uuid.New()
	evs, err := cs.Claim(ctxT(t), claim.Request{Worker: "w", Token: tok, Limit: 10, Lease: time.Minute, Partitions: fx.AllPartitions(t, db.Pool)})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("claim during the rebuild got %d rows, want 3", len(evs))
	}
	var out claim.Outcomes
	for _, e := range evs {
		out.Published = append(out.Published, claim.Published{ID: e.ID, MessageID: "m"})
	}
	if a, err := cs.Mark(ctxT(t), tok, out); err != nil || len(a.Published) != 3 {
		t.Fatalf("marking published during the rebuild: %+v, %v", a, err)
	}
	select {
	case r := <-rebuilt:
		t.Fatalf("the rebuild ended while the snapshot was open: %+v", r)
	default:
	}

	if err := snapshot.Commit(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	r := <-rebuilt
	if r.err != nil || !r.locked || len(r.done) != 1 || r.done[0].Err != nil {
		t.Fatalf("rebuild: %+v", r)
	}
	if fx.IndexOID(t, db.Pool, pendingIdx) == oid {
		t.Fatal("the pending index was not replaced")
	}
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(2), 2, 0))
	evs, err = cs.Claim(ctxT(t), claim.Request{Worker: "w", Token: uuid.New(), Limit: 10, Lease: time.Minute, Partitions: fx.AllPartitions(t, db.Pool)})
	if err != nil || len(evs) != 1 || evs[0].AggregateVersion != 2 {
		t.Fatalf("claim after the rebuild = %+v, want version 2 of aggregate 2", evs)
	}
}

// TestOutboxIndexNamesAreTheMigrationsIndexes: the index upkeep measures
// and rebuilds only the indexes in upkeep.OutboxIndexNames, so a migration
// that adds an index to outbox_events without adding it there would leave
// that index to bloat unnoticed. The list must be exactly the indexes the
// migrations create.
func TestOutboxIndexNamesAreTheMigrationsIndexes(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	rows, err := db.Pool.Query(context.Background(),
		`SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'outbox_events' ORDER BY 1`)
	if err != nil {
		t.Fatalf("listing the indexes of outbox_events: %v", err)
	}
	created, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("listing the indexes of outbox_events: %v", err)
	}
	listed := slices.Sorted(slices.Values(upkeep.OutboxIndexNames))
	if !slices.Equal(created, listed) {
		t.Errorf("outbox_events has the indexes %v after the migrations, upkeep.OutboxIndexNames lists %v: add the new ones to the list (the index upkeep sees only those)", created, listed)
	}
}
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
