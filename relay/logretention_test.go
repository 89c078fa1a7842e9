package relay_test

import (
	"context"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

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

// TestLogModeRetentionDeletesOnlyPublishedRows: in the log mode rows stay
// pending; retention deletes those below the slot's published horizon
// and never one Pub/Sub has not acknowledged: not while a Pub/Sub outage
// holds the stream, never a failed row or the rows its key holds behind
// it; once the outage ends, every other row is deleted.
func TestLogModeRetentionDeletesOnlyPublishedRows(t *testing.T) {
	t.Parallel()
	db := logDB(t)
	down := fx.ID(7)
	fault := newFault(codes.Unavailable, down)
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: fault})
	ps.Topic(t, fx.Topic)
	cfg := logConfig(t, "log-a", ps)
	cfg.Publish.MaxMessageBytes = 4000
	cfg.Retention = time.Millisecond
	cfg.RetentionInterval = 100 * time.Millisecond
	fx.StartRelay(t, db.Pool, cfg)
	w := fx.Writer(t, false)
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
	if n := count(t, db, `SELECT count(*) FROM outbox_events`); n != len(written) {
		t.Fatalf("%d of %d rows left while the stream was held, want all (none is confirmed)", n, len(written))
	}
	fault.on.Store(false)
	fx.WaitFor(t, 60*time.Second, "the held rows deleted once published", func() bool {
		requireDeletedPublished()
		return count(t, db, `SELECT count(*) FROM outbox_events`) == 2
	})
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE aggregate_id = $1`, large); n != 2 {
		t.Fatalf("%d rows of the failed key left, want its failed row and the one behind it", n)
	}
}
