package projector

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
)

// deletes records the rows affected by each DeleteExpiredInboxEvents and
// the statement with its arguments, for EXPLAIN.
type deletes struct {
	mu    sync.Mutex
	query []any
	rows  []int64
}

// deleteKey marks the context of a traced DeleteExpiredInboxEvents.
type deleteKey struct{}

func (d *deletes) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	if strings.Contains(q.SQL, "-- name: DeleteExpiredInboxEvents") {
		d.mu.Lock()
		d.query = append([]any{q.SQL}, q.Args...)
		d.mu.Unlock()
		return context.WithValue(ctx, deleteKey{}, true)
	}
	return ctx
}

func (d *deletes) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryEndData) {
	if ctx.Value(deleteKey{}) == nil || q.Err != nil {
		return
	}
	d.mu.Lock()
	d.rows = append(d.rows, q.CommandTag.RowsAffected())
	d.mu.Unlock()
}

// insertInbox adds n inbox rows of consumer processed age ago (NULL
// processed_at when processed is false).
func insertInbox(t *testing.T, pool *pgxpool.Pool, consumer string, n int, age time.Duration, processed bool) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `
		INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                          received_at, processed_at)
		SELECT $1, gen_random_uuid(), 'counter', 'c' || g, 1, 'counter.set',
		       now() - make_interval(secs => $3), CASE WHEN $4 THEN now() - make_interval(secs => $3) END
		FROM generate_series(1, $2) g`, consumer, n, age.Seconds(), processed)
	if err != nil {
		t.Fatal(err)
	}
}

func inboxCounts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	rows, err := pool.Query(t.Context(), `
		SELECT consumer || CASE WHEN processed_at IS NULL THEN '/unprocessed'
		                        WHEN processed_at < now() - interval '1 hour' THEN '/old' ELSE '/recent' END, count(*)
		FROM inbox_events GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			t.Fatal(err)
		}
		got[k] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestInboxRetentionDeletesOldRowsOfItsConsumerInBatches shows, on a real
// Postgres, that a retention round deletes the consumer's rows processed
// before the retention age in batches of BatchSize until one comes back
// short, and keeps its recent rows, its rows without processed_at and
// every row of other consumers; the DELETE walks
// inbox_events_processed_idx, never the whole table.
func TestInboxRetentionDeletesOldRowsOfItsConsumerInBatches(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}})
	insertInbox(t, db.Pool, "a", 5, 2*time.Hour, true)
	insertInbox(t, db.Pool, "a", 2, time.Minute, true)
	insertInbox(t, db.Pool, "a", 1, 2*time.Hour, false)
	insertInbox(t, db.Pool, "b", 3, 2*time.Hour, true)
	// Other consumers' rows, so that the planner has a table to avoid.
	insertInbox(t, db.Pool, "c", 20000, 2*time.Hour, true)
	if _, err := db.Pool.Exec(t.Context(), `ANALYZE inbox_events`); err != nil {
		t.Fatal(err)
	}

	cfg, err := pgxpool.ParseConfig(db.Pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams = db.Pool.Config().ConnConfig.RuntimeParams
	rec := &deletes{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{InboxRetentionBatchSize: 2}.WithDefaults()
	r := newInboxRetention(pool, "proj-a", "a", time.Hour, o, m, slog.Default())
	if err := r.DeleteExpired(t.Context()); err != nil {
		t.Fatal(err)
	}

	if got := rec.rows; len(got) != 3 || got[0] != 2 || got[1] != 2 || got[2] != 1 {
		t.Errorf("rows deleted per DELETE = %v, want [2 2 1]", got)
	}
	want := map[string]int{"a/recent": 2, "a/unprocessed": 1, "b/old": 3, "c/old": 20000}
	if got := inboxCounts(t, db.Pool); len(got) != len(want) || got["a/recent"] != 2 || got["a/unprocessed"] != 1 || got["b/old"] != 3 || got["c/old"] != 20000 {
		t.Errorf("inbox rows after retention = %v, want %v", got, want)
	}
	if n := opstest.Metric(t, reg, "projector_inbox_deleted_total", map[string]string{"projection": "proj-a"}); n != 5 {
		t.Errorf("projector_inbox_deleted_total{projection=proj-a} = %v, want 5", n)
	}

	// The plan of the last DELETE (EXPLAIN without ANALYZE does not run it).
	var plan string
	if err := db.Pool.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON, COSTS OFF) "+rec.query[0].(string), rec.query[1:]...).Scan(&plan); err != nil {
		t.Fatalf("explain: %v", err)
	}
	t.Logf("plan of the retention DELETE:\n%s", plan)
	if !strings.Contains(plan, `"Index Name": "inbox_events_processed_idx"`) || strings.Contains(plan, "Seq Scan") {
		t.Errorf("the retention DELETE does not walk inbox_events_processed_idx:\n%s", plan)
	}
}

// TestInboxRetentionCountsFailedRounds shows a failing round (the table is
// gone) counted in projector_inbox_retention_failed_total and retried at
// the next interval rather than ending the loop.
func TestInboxRetentionCountsFailedRounds(t *testing.T) {
	t.Parallel()
	db := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}})
	if _, err := db.Pool.Exec(t.Context(), `DROP TABLE inbox_events`); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{InboxRetentionInterval: 10 * time.Millisecond}.WithDefaults()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		newInboxRetention(db.Pool, "proj-a", "a", time.Hour, o, m, slog.Default()).Run(ctx)
	}()
	label := map[string]string{"projection": "proj-a"}
	give := time.After(time.Minute) // a bound against hangs, not a speed check
	for opstest.Metric(t, reg, "projector_inbox_retention_failed_total", label) < 2 {
		select {
		case <-give:
			t.Fatal("still fewer than 2 failed retention rounds after a minute")
		case <-done:
			t.Fatal("Run returned after a failed round")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
}
