package relay_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// rowID is the id of version v of aggregate id.
func rowID(t *testing.T, db *relaytest.DB, id string, v int64) int64 {
	t.Helper()
	return int64(count(t, db, `SELECT id::int FROM outbox_events WHERE aggregate_id = $1 AND aggregate_version = $2`, id, v))
}

// TestLogModePublishesReplayedAndReleasedRows: in the log mode an
// update is what brings a row back (the slot carries no second insert):
// a failed row replayed (relayctl replay, failed retry and the re-drive
// policy run ReplayOutboxRows) is published again with the rows its key
// held behind it, in order; resolving a failed row releases the rows
// behind it without publishing it; a row the polling relay had published
// and whose payload Postgres stores out of line (the update's message
// leaves it out) is read from the table and published again.
func TestLogModePublishesReplayedAndReleasedRows(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	ctx := context.Background()
	// Large payloads out of line and uncompressed: an update that leaves
	// them unchanged does not carry them.
	if _, err := db.Pool.Exec(ctx, `ALTER TABLE outbox_events ALTER COLUMN payload SET STORAGE EXTERNAL`); err != nil {
		t.Fatal(err)
	}
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	w := fx.Writer(t, false)
	old := fx.ID(70)
	fx.Insert(t, db.Pool, w, fx.Item(old, 1, 3000))
	// Published by the polling relay before the switch to the log mode.
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox_events SET status = 'published', published_at = now() WHERE aggregate_id = $1`, old); err != nil {
		t.Fatal(err)
	}

	cfg := logConfig(t, "log-a", ps)
	cfg.Publish.MaxMessageBytes = 4000
	a := fx.StartRelay(t, db.Pool, cfg)
	replayed, resolved := fx.ID(80), fx.ID(90)
	fx.Insert(t, db.Pool, w, fx.Item(replayed, 1, 0), fx.Item(resolved, 1, 5000))
	fx.Insert(t, db.Pool, w, fx.Item(replayed, 2, 5000), fx.Item(resolved, 2, 0))
	fx.Insert(t, db.Pool, w, fx.Item(replayed, 3, 0), fx.Item(resolved, 3, 0), fx.Item(fx.ID(1), 1, 0))
	fx.WaitFor(t, 60*time.Second, "the two oversize rows failed and the rest passed", func() bool {
		return count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`) == 2 &&
			len(publishedVersions(t, ps, fx.ID(1))) == 1
	})
	a.Stop(t)
	if got := len(ps.Messages()); got != 2 {
		t.Fatalf("%d messages before the replay, want 2 (%s v1 and key 1)", got, replayed)
	}

	// The failed row of one key is replayed and the other's resolved while
	// no reader runs (the next session's start finds no failed row: the
	// updates say what to release), then the relay restarts with the size
	// limit raised.
	q := outboxdb.New(db.Pool)
	if _, err := q.ReplayOutboxRows(ctx, outboxdb.ReplayOutboxRowsParams{Ids: []int64{rowID(t, db, replayed, 2)}, Statuses: []string{"failed"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox_events SET status = 'resolved', resolved_at = now() WHERE id = $1`, rowID(t, db, resolved, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ReplayOutboxRows(ctx, outboxdb.ReplayOutboxRowsParams{Ids: []int64{rowID(t, db, old, 1)}, Statuses: []string{"published"}}); err != nil {
		t.Fatal(err)
	}
	fx.StartRelay(t, db.Pool, logConfig(t, "log-b", ps))
	fx.WaitFor(t, 60*time.Second, "the replayed and released rows", func() bool {
		return len(publishedVersions(t, ps, replayed)) >= 3 && len(publishedVersions(t, ps, resolved)) >= 2 &&
			len(publishedVersions(t, ps, old)) >= 1
	})
	time.Sleep(500 * time.Millisecond) // nothing more may arrive
	requireVersions := func(key string, want ...int64) {
		t.Helper()
		got := publishedVersions(t, ps, key)
		if len(got) != len(want) {
			t.Fatalf("key %s published versions %v, want %v", key, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("key %s published versions %v, want %v", key, got, want)
			}
		}
	}
	requireVersions(replayed, 1, 2, 3)
	requireVersions(resolved, 2, 3)
	requireVersions(old, 1)
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`); n != 0 {
		t.Fatalf("%d failed rows after the replay, want 0", n)
	}
}
