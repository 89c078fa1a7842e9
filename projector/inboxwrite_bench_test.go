package projector_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

// itemViewDDL is a read model of the width of a typical projection row
// (ids, a few texts and states, timestamps, the applying event).
const itemViewDDL = `CREATE TABLE item_view (
    id uuid PRIMARY KEY, owner_id uuid NOT NULL, title text NOT NULL, description text NOT NULL,
    size bigint NOT NULL, state text NOT NULL, media_state text NOT NULL, review_state text NOT NULL,
    version bigint NOT NULL, created_at timestamptz NOT NULL, source_updated_at timestamptz NOT NULL,
    deleted_at timestamptz, last_event_id uuid NOT NULL, occurred_at timestamptz NOT NULL,
    projected_at timestamptz NOT NULL)`

// sqlUpsertItemView applies a row only when it is newer (the version
// guard every transactional handler needs).
const sqlUpsertItemView = `INSERT INTO item_view (id, owner_id, title, description, size, state, media_state,
    review_state, version, created_at, source_updated_at, deleted_at, last_event_id, occurred_at, projected_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now())
ON CONFLICT (id) DO UPDATE
SET owner_id = excluded.owner_id, title = excluded.title, description = excluded.description, size = excluded.size,
    state = excluded.state, media_state = excluded.media_state, review_state = excluded.review_state,
    version = excluded.version, created_at = excluded.created_at, source_updated_at = excluded.source_updated_at,
    deleted_at = excluded.deleted_at, last_event_id = excluded.last_event_id, occurred_at = excluded.occurred_at,
    projected_at = now()
WHERE item_view.version < excluded.version`

// itemWrite is one event's inbox row and read model row.
type itemWrite struct {
	key    int
	inbox  inboxdb.InsertInboxEventParams
	upsert []any
}

// writeItem records the event's inbox row (the statement the projector
// runs before a Tx handler) and upserts its row; a batch of them goes to
// Postgres in one round trip.
var writeItem = projection.ExecFunc[*itemWrite](func(ctx context.Context, db projection.DBTX, _ *projection.Event, w *itemWrite) error {
	if _, err := inboxdb.New(db).InsertInboxEvent(ctx, w.inbox); err != nil {
		return err
	}
	_, err := db.Exec(ctx, sqlUpsertItemView, w.upsert...)
	return err
})

// BenchmarkInboxWrite is the Postgres write ceiling of a transactional
// projection, with no Pub/Sub and no projector in the way: per event the
// inbox insert and a version-guarded upsert, BENCH_BATCH (500) events per
// transaction, BENCH_WORKERS (1) concurrent writers each owning its keys
// (no row lock waits). BENCH_EVENTS (20,000) events over BENCH_KEYS (1,000)
// keys, on a fresh test database. Metrics: events/s, events/op.
//
//	go test -run '^$' -bench InboxWrite -benchtime 1x ./projector/
func BenchmarkInboxWrite(b *testing.B) {
	env := func(name string, def int) int {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want a positive integer", name, v)
		}
		return n
	}
	events, keys, batch, workers := env("BENCH_EVENTS", 20_000), env("BENCH_KEYS", 1_000), env("BENCH_BATCH", 500), env("BENCH_WORKERS", 1)
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, itemViewDDL); err != nil {
		b.Fatal(err)
	}
	writes := itemWrites(events, keys)
	b.ResetTimer()
	var took time.Duration
	for i := range b.N {
		if i > 0 {
			b.StopTimer()
			if _, err := db.Pool.Exec(ctx, `TRUNCATE inbox_events, item_view`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		start := time.Now()
		if err := writeItems(ctx, db, writes, batch, workers); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM inbox_events`).Scan(&n); err != nil || n != events {
			b.Fatalf("%d inbox rows, want %d (%v)", n, events, err)
		}
	}
	b.ReportMetric(float64(events*b.N)/took.Seconds(), "events/s")
	b.ReportMetric(float64(events), "events/op")
}

// itemWrites generates events round-robin over keys, each key's versions
// growing by one.
func itemWrites(events, keys int) []itemWrite {
	ids := make([]uuid.UUID, keys)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7())
	}
	owner, now := uuid.New(), time.Now().UTC()
	out := make([]itemWrite, events)
	for i := range out {
		k, version := i%keys, int64(i/keys+1)
		eventID := uuid.Must(uuid.NewV7())
		out[i] = itemWrite{key: k,
			inbox: inboxdb.InsertInboxEventParams{Consumer: "items.view", EventID: eventID, AggregateType: "item",
				AggregateID: ids[k].String(), AggregateVersion: version, EventType: "test.item.updated",
				MessageID: pgtype.Text{String: "msg-" + eventID.String(), Valid: true}},
			upsert: []any{ids[k], owner, "Item " + strconv.Itoa(k) + " take " + strconv.FormatInt(version, 10), "Item.",
				int64(90_000_000 + i%1000), "published", "ready", "approved", version, now, now, nil, eventID, now},
		}
	}
	return out
}

// writeItems writes every event with workers concurrent writers (writer
// w owns the keys k with k%workers == w), batch events per transaction.
func writeItems(ctx context.Context, db *relaytest.DB, writes []itemWrite, batch, workers int) error {
	parts := make([][]itemWrite, workers)
	for _, w := range writes {
		parts[w.key%workers] = append(parts[w.key%workers], w)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for _, part := range parts {
		wg.Go(func() {
			for i := 0; i < len(part); i += batch {
				chunk := part[i:min(i+batch, len(part))]
				evs := make([]*projection.Event, len(chunk))
				for j := range chunk {
					evs[j] = &projection.Event{Payload: &chunk[j]}
				}
				err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
					_, err := writeItem.HandleTxBatch(ctx, tx, evs)
					return err
				})
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
