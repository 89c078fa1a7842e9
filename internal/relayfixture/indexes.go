package relayfixture

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// PublishedWave is a drained backlog: it inserts n pending rows (over 100
// keys), marks them all published at publishedAt (as claim and mark would,
// leaving dead entries in the pending indexes) and runs VACUUM ANALYZE. The
// pending indexes then keep the pages of n rows and hold none.
func PublishedWave(t testing.TB, pool *pgxpool.Pool, n int, publishedAt time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                             ordering_key, topic, payload, occurred_at)
		  SELECT gen_random_uuid(), $3::text, 'wave-' || (g % 100), g / 100 + 1, $4::text,
		         'wave-' || (g % 100), $1, '\x00'::bytea, now()
		  FROM generate_series(0, $2::int - 1) AS g`, []any{Topic, n, testevent.AggregateType, testevent.TypeUpdated}},
		{`UPDATE outbox_events SET status = 'published', published_at = $1, message_id = 'm' WHERE status = 'pending'`,
			[]any{publishedAt}},
		{`VACUUM ANALYZE outbox_events`, nil},
	} {
		if _, err := pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("published wave of %d rows: %v", n, err)
		}
	}
}

// IndexOID is the oid of an index of the schema: REINDEX CONCURRENTLY
// replaces it.
func IndexOID(t testing.TB, pool *pgxpool.Pool, name string) uint32 {
	t.Helper()
	var oid uint32
	if err := pool.QueryRow(context.Background(), `SELECT $1::text::regclass::oid`, name).Scan(&oid); err != nil {
		t.Fatalf("oid of %s: %v", name, err)
	}
	return oid
}
