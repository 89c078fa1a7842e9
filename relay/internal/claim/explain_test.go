package claim_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// recorder captures the SQL and arguments of the queries a pool runs.
// begins are the SQL of the transactions' BEGINs, in order.
type recorder struct {
	mu      sync.Mutex
	queries map[string][]any
	begins  []string
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(strings.ToUpper(d.SQL), "BEGIN") {
		r.mu.Lock()
		r.begins = append(r.begins, d.SQL)
		r.mu.Unlock()
	}
	if i := strings.Index(d.SQL, "-- name: "); i >= 0 {
		name := strings.Fields(d.SQL[i+len("-- name: "):])[0]
		r.mu.Lock()
		r.queries[name] = append([]any{d.SQL}, d.Args...)
		r.mu.Unlock()
	}
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// explain runs EXPLAIN ANALYZE of a recorded query in a rolled-back
// transaction and returns the plan. The transaction first deletes the
// claims' lease rows, so that a recorded claim runs again with its token.
func explain(t *testing.T, pool *pgxpool.Pool, q []any) string {
	t.Helper()
	tx, err := pool.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	forgetLeases(t, tx)
	rows, err := tx.Query(ctxT(t), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+q[0].(string), q[1:]...)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	return planText(t, rows)
}

// explainGeneric is explain with the generic plan of the query, the one
// Postgres may reuse for a prepared statement after five executions: it
// prepares the query on one connection with plan_cache_mode
// force_generic_plan and explains its execution with the recorded
// arguments.
func explainGeneric(t *testing.T, pool *pgxpool.Pool, q []any) string {
	t.Helper()
	tx, err := pool.Begin(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if _, err := tx.Exec(ctxT(t), "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	forgetLeases(t, tx)
	if _, err := tx.Exec(ctxT(t), "PREPARE generic_claim AS "+q[0].(string)); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	params := make([]string, len(q)-1)
	for i, a := range q[1:] {
		params[i] = literal(t, a)
	}
	rows, err := tx.Query(ctxT(t), "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE generic_claim("+strings.Join(params, ", ")+")")
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	plan := planText(t, rows)
	// A prepared statement outlives the transaction: the pool's next
	// explainGeneric may run on this connection.
	if _, err := tx.Exec(ctxT(t), "DEALLOCATE generic_claim"); err != nil {
		t.Fatal(err)
	}
	return plan
}

// forgetLeases deletes the claims' lease rows in tx (rolled back by the
// caller).
func forgetLeases(t *testing.T, tx pgx.Tx) {
	t.Helper()
	if _, err := tx.Exec(ctxT(t), "DELETE FROM outbox_claims"); err != nil {
		t.Fatal(err)
	}
}

// planText is an EXPLAIN's output, one line per row.
func planText(t *testing.T, rows pgx.Rows) string {
	t.Helper()
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// sharedBuffers is the number of shared buffers (hit and read) the
// plan's top node reports: its first "Buffers:" line.
func sharedBuffers(t *testing.T, plan string) int {
	t.Helper()
	m := regexp.MustCompile(`Buffers: shared((?: \w+=\d+)+)`).FindStringSubmatch(plan)
	if m == nil {
		t.Fatalf("no shared buffers in the plan:\n%s", plan)
	}
	n := 0
	for _, f := range strings.Fields(m[1]) {
		k, v, _ := strings.Cut(f, "=")
		if k == "hit" || k == "read" {
			c, _ := strconv.Atoi(v)
			n += c
		}
	}
	return n
}

// insertPending writes the pending rows g = from..to, of keys ordering
// keys (md5(g % keys) as a uuid; version g / keys + 1), each with a
// payload of payload bytes, through q (a pool or a transaction).
func insertPending(t *testing.T, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, from, to, keys, payload int) {
	t.Helper()
	_, err := q.Exec(ctxT(t), `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                           ordering_key, topic, payload, occurred_at)
		SELECT gen_random_uuid(), 'item', md5((g % $3)::text)::uuid::text, g / $3 + 1, 'test.item.updated',
		       md5((g % $3)::text)::uuid::text, 'test-items', decode(repeat('ab', $4), 'hex'), now()
		FROM generate_series($1::int, $2::int) AS g`, from, to, keys, payload)
	if err != nil {
		t.Fatal(err)
	}
}

// literal renders a recorded query argument as an SQL literal.
func literal(t *testing.T, a any) string {
	t.Helper()
	switch v := a.(type) {
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case uuid.UUID:
		return "'" + v.String() + "'"
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int32:
		return strconv.Itoa(int(v))
	case []int32:
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = strconv.Itoa(int(n))
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::int[]"
	case []int64:
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = strconv.FormatInt(n, 10)
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::bigint[]"
	case []string:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = literal(t, x)
		}
		return "ARRAY[" + strings.Join(parts, ",") + "]::text[]"
	}
	t.Fatalf("no literal for an argument of type %T", a)
	return ""
}

// tracedStore is a Store on its own pool of db whose queries rec records.
func tracedStore(t *testing.T, db *relaytest.DB) (store, *recorder) {
	t.Helper()
	rec := &recorder{queries: map[string][]any{}}
	pc, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig.RuntimeParams["search_path"] = db.Schema
	pc.ConnConfig.Tracer = rec
	traced, err := pgxpool.NewWithConfig(ctxT(t), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return newStore(traced), rec
}

// evenPartitions are half of the partitions: one replica's of two.
func evenPartitions(t *testing.T, s store) []int32 {
	t.Helper()
	var half []int32
	for _, p := range s.partitions(t) {
		if p%2 == 0 {
			half = append(half, p)
		}
	}
	return half
}

// TestClaimPlanUsesPartialIndexes checks, on a table with many pending and
// published rows and some blocked keys, that the candidate scan walks
// outbox_events_pending_idx in id order and the head-of-line NOT EXISTS
// probes outbox_events_blocking_idx, so a claim costs about the batch size,
// not the table size. The claim is one replica's of two (half of the
// partitions): the partition filter is evaluated on the index's
// ordering_key and passes the other half over.
func TestClaimPlanUsesPartialIndexes(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	// 60k published, 60k pending over 6k keys; every 10th key has a failed
	// head and a retry-waiting row.
	_, err := db.Pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                           ordering_key, topic, payload, occurred_at, status, published_at, attempts, next_attempt_at)
		SELECT gen_random_uuid(), 'item', 'k' || (g % 6000), g / 6000 + 1, 'test.item.updated',
		       'k' || (g % 6000), 'test-items', '\x00'::bytea, now(),
		       CASE WHEN g < 60000 THEN 'published'
		            WHEN g < 60600 AND g % 60 = 0 THEN 'failed'
		            ELSE 'pending' END,
		       CASE WHEN g < 60000 THEN now() END,
		       CASE WHEN g BETWEEN 60600 AND 61200 AND g % 60 = 30 THEN 3 ELSE 0 END,
		       CASE WHEN g BETWEEN 60600 AND 61200 AND g % 60 = 30 THEN now() + interval '1 hour' ELSE now() END
		FROM generate_series(0, 119999) AS g`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE outbox_events`); err != nil {
		t.Fatal(err)
	}

	s, rec := tracedStore(t, db)
	start := time.Now()
	half := evenPartitions(t, s)
	evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: uuid.New(), Limit: 500, Lease: time.Minute, Partitions: half})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("claim of %d rows with 60k pending took %s", len(evs), time.Since(start))
	if len(evs) != 500 {
		t.Fatalf("claimed %d rows, want 500", len(evs))
	}
	blocked := map[string]bool{}
	for g := 60000; g <= 61200; g++ {
		if (g < 60600 && g%60 == 0) || (g >= 60600 && g%60 == 30) {
			blocked["k"+strconv.Itoa(g%6000)] = true
		}
	}
	for _, e := range evs {
		var p int32
		if err := db.Pool.QueryRow(ctx, `SELECT outbox_partition_of($1)`, e.OrderingKey).Scan(&p); err != nil {
			t.Fatal(err)
		}
		if p%2 != 0 {
			t.Fatalf("claimed %s of partition %d, not among the claim's", e.OrderingKey, p)
		}
		if blocked[e.OrderingKey] {
			t.Fatalf("claimed %s v%d behind a failed or retry-waiting head", e.OrderingKey, e.AggregateVersion)
		}
	}

	plan := explain(t, db.Pool, rec.queries["ClaimOutboxEvents"])
	t.Logf("claim plan:\n%s", plan)
	for _, want := range []string{"outbox_events_pending_idx", "outbox_events_blocking_idx", "outbox_events_pending_key_idx", "hashtext(ordering_key)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("claim plan does not use %s", want)
		}
	}
	// The sorts allowed are over the claim's own candidates (at most
	// batch_size plus topic_share per topic, in memory): the fair pick
	// across topics, the picked keys' heads in pick order and the window
	// over the locked rows.
	own := 0
	for _, key := range []string{"Sort Key: locked.", "Sort Key: p.rank_in_topic", "Sort Key: (row_number() OVER (?)), c.id",
		"Sort Key: fifo.topic", "Sort Key: c.topic", "Sort Key: p.topic, p.ordering_key", "Sort Key: h.rank_in_topic",
		// fifo read as a CTE (the topics scan counts its rows too)
		"Sort Key: (row_number() OVER (?)), fifo_1.id", "Sort Key: fifo_1.topic"} {
		own += strings.Count(plan, key)
	}
	if strings.Contains(plan, "Seq Scan") || strings.Count(plan, "Sort (") != own || strings.Contains(plan, "Sort Key: k.") {
		t.Errorf("claim plan scans or sorts the table")
	}
	if _, err := s.Stats(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	plan = explain(t, db.Pool, rec.queries["OutboxStats"])
	t.Logf("stats plan:\n%s", plan)
	if strings.Contains(plan, "Seq Scan on outbox_events") { // outbox_claims: a row per claim in flight
		t.Errorf("stats plan scans the table")
	}
}

// TestClaimPlanAfterAnAnalyzeOfABacklog checks that the claim keeps
// reading outbox_events_pending_idx when the last ANALYZE saw a backlog
// (every row pending) and most rows were published since, as during a
// drain: with status statistics the planner took the primary key there,
// walked every published row from the first and filtered it out (21 ms
// for 25 rows here, 0.7 ms on the partial index), and each claim of the
// drain got slower (migration 00007). Rows as wide as real events: with
// narrow ones the primary key is not the cheaper guess.
func TestClaimPlanAfterAnAnalyzeOfABacklog(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	insertPending(t, db.Pool, 0, 29999, 5000, 400)
	if _, err := db.Pool.Exec(ctx, `ANALYZE outbox_events`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox_events SET status = 'published', published_at = now() WHERE id <= 27000`); err != nil {
		t.Fatal(err)
	}

	s, rec := tracedStore(t, db)
	half := evenPartitions(t, s)
	evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: uuid.New(), Limit: 25, Lease: time.Minute, Partitions: half})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 25 {
		t.Fatalf("claimed %d rows, want 25", len(evs))
	}
	plan := explain(t, db.Pool, rec.queries["ClaimOutboxEvents"])
	t.Logf("claim plan:\n%s", plan)
	if !strings.Contains(plan, "using outbox_events_pending_idx on outbox_events c") {
		t.Errorf("the candidate scan does not read outbox_events_pending_idx")
	}
	if strings.Contains(plan, "outbox_events_pkey on outbox_events c") {
		t.Errorf("the candidate scan walks the primary key over the 27,000 published rows")
	}
}

// TestFencedWritesReadByPrimaryKey checks that the writes to claimed rows
// (outcome, retry, failure, release, lease extension) find their rows by
// primary key, not through the partial status indexes: every earlier batch
// leaves entries in outbox_events_pending_idx and blocking_idx until a
// VACUUM, which the planner's estimates do not see. Through those indexes
// a mark of 20 rows visited every heap page the dead entries pointed at
// (433 buffers to find 20 rows after 10,000 events; 60 by primary key),
// and its cost grew with the throughput since the last VACUUM.
func TestFencedWritesReadByPrimaryKey(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := ctxT(t)
	insert := func(from, to int) {
		t.Helper()
		_, err := db.Pool.Exec(ctx, `
			INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
			                           ordering_key, topic, payload, occurred_at)
			SELECT gen_random_uuid(), 'item', md5(g::text)::uuid::text, 1, 'test.item.updated',
			       md5(g::text)::uuid::text, 'test-items', decode(repeat('ab', 400), 'hex'), now()
			FROM generate_series($1::int, $2::int) AS g`, from, to)
		if err != nil {
			t.Fatal(err)
		}
	}
	s, rec := tracedStore(t, db)
	all := s.partitions(t)
	claimN := func(n int) ([]claim.Event, uuid.UUID) {
		t.Helper()
		token := uuid.New()
		evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: token, Limit: n, Lease: time.Minute, Partitions: all})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != n {
			t.Fatalf("claimed %d rows, want %d", len(evs), n)
		}
		return evs, token
	}
	published := func(evs []claim.Event) claim.Outcomes {
		var o claim.Outcomes
		for _, e := range evs {
			o.Published = append(o.Published, claim.Published{ID: e.ID, MessageID: "m"})
		}
		return o
	}
	// 10,000 events through claim and mark in batches of 20, no VACUUM:
	// the partial indexes keep an entry for each.
	insert(0, 9999)
	for range 500 {
		evs, token := claimN(20)
		if _, err := s.Mark(ctx, token, published(evs)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `ANALYZE outbox_events`); err != nil {
		t.Fatal(err)
	}

	insert(10000, 10099)
	evs, token := claimN(100)
	ids := func(from, to int) []int64 {
		var out []int64
		for _, e := range evs[from:to] {
			out = append(out, e.ID)
		}
		return out
	}
	if _, err := s.ExtendLease(ctx, token, ids(0, 100), time.Minute); err != nil {
		t.Fatal(err)
	}
	o := published(evs[:20])
	for _, e := range evs[20:40] {
		o.Rescheduled = append(o.Rescheduled, claim.Rescheduled{ID: e.ID, Delay: time.Minute, Reason: "unavailable", Err: "test"})
	}
	for _, e := range evs[40:60] {
		o.Failures = append(o.Failures, claim.Failure{ID: e.ID, Reason: "max_attempts_exceeded", Cause: "unavailable", Err: "test", Attempted: true})
	}
	o.Released = ids(60, 80)
	if _, err := s.Mark(ctx, token, o); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release(ctx, token, ids(80, 100)); err != nil {
		t.Fatal(err)
	}
	// The lease table as autovacuum keeps it (a row per claim in flight);
	// outbox_events keeps its dead entries.
	if _, err := db.Pool.Exec(ctx, `VACUUM outbox_claims`); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"MarkOutboxPublished", "ScheduleOutboxRetry", "MarkOutboxFailed", "ReleaseOutboxEvents", "ExtendOutboxLease"} {
		q := rec.queries[name]
		if q == nil {
			t.Errorf("%s did not run", name)
			continue
		}
		plan := explain(t, db.Pool, q)
		if name == "ExtendOutboxLease" {
			// The claim's lease row: by primary key, or by a scan of the
			// table's few pages, the planner's cheaper choice when it is
			// that small.
			if strings.Contains(plan, "outbox_events") || sharedBuffers(t, plan) > 8 {
				t.Errorf("%s reads more than its lease row's few pages:\n%s", name, plan)
			}
			continue
		}
		if !strings.Contains(plan, "outbox_events_pkey") || strings.Contains(plan, "Seq Scan") ||
			strings.Contains(plan, "pending_idx") || strings.Contains(plan, "blocking_idx") {
			t.Errorf("%s does not find its rows by primary key:\n%s", name, plan)
		}
	}
}

// TestClaimReadsEachPickedKeyFromTheKeyIndex checks that the rows of each
// picked key are read from outbox_events_pending_key_idx, from the key's
// head on, in the plan for the claim's values and in the generic plan the
// driver's prepared statement may switch to after five executions. When
// that scan also asked for next_attempt_at, the planner, which takes both
// partial indexes for small (no statistics on status), read the key's
// rows from outbox_events_pending_idx instead, filtering on the key: past
// every later pending row, per key. It did so here, and in the bench's
// scale scenario (350 ms per claim of 500 rows at 10,000 pending rows
// instead of 25, by both plans).
//
// It checks the same of each topic's first rows (the per-topic share),
// also on a backlog that the last ANALYZE saw but no VACUUM visited yet (a
// writers' burst, then a drain). Knowing the share's LIMIT, the plan for
// the claim's values took the topic's pending rows for fewer than it, and
// read and sorted every one of them from outbox_events_pending_idx: 14,800
// buffers against 7,200 there, 150,000 heap fetches per claim in the
// bench's drain of 200,000 rows (decision 0023).
func TestClaimReadsEachPickedKeyFromTheKeyIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		published, pending int
		vacuum             bool
	}{{0, 10000, true}, {25000, 10000, true}, {0, 50000, false}} {
		t.Run(fmt.Sprintf("%d published, %d pending, vacuum %v", c.published, c.pending, c.vacuum), func(t *testing.T) {
			t.Parallel()
			db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
			ctx := ctxT(t)
			_, err := db.Pool.Exec(ctx, `
				INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
				                           ordering_key, topic, payload, occurred_at, status, published_at)
				SELECT gen_random_uuid(), 'item', md5((g % 5000)::text)::uuid::text, g / 5000 + 1, 'test.item.updated',
				       md5((g % 5000)::text)::uuid::text, 'test-items', decode(repeat('ab', 190), 'hex'), now(),
				       CASE WHEN g < $1::int THEN 'published' ELSE 'pending' END,
				       CASE WHEN g < $1::int THEN now() END
				FROM generate_series(0, $1::int + $2::int - 1) AS g`, c.published, c.pending)
			if err != nil {
				t.Fatal(err)
			}
			analyze := "ANALYZE outbox_events"
			if c.vacuum {
				analyze = "VACUUM " + analyze
			}
			if _, err := db.Pool.Exec(ctx, analyze); err != nil {
				t.Fatal(err)
			}
			if c.vacuum {
				allVisible(t, db)
			}
			s, rec := tracedStore(t, db)
			evs, err := s.Claim(ctx, claim.Request{Worker: "explain", Token: uuid.New(), Limit: 500, Lease: time.Minute, Partitions: s.partitions(t)})
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != 500 {
				t.Fatalf("claimed %d rows, want 500", len(evs))
			}
			for _, kind := range []string{"custom", "generic"} {
				plan := explain(t, db.Pool, rec.queries["ClaimOutboxEvents"])
				if kind == "generic" {
					plan = explainGeneric(t, db.Pool, rec.queries["ClaimOutboxEvents"])
				}
				t.Logf("%s claim plan:\n%s", kind, plan)
				if strings.Contains(plan, "using outbox_events_pending_idx on outbox_events k_1") ||
					!strings.Contains(plan, "using outbox_events_pending_key_idx on outbox_events k_1") {
					t.Errorf("%s plan: the picked keys' rows are not read from outbox_events_pending_key_idx", kind)
				}
				if strings.Contains(plan, "Sort Key: k.") || !strings.Contains(plan, "using outbox_events_pending_key_idx on outbox_events k ") {
					t.Errorf("%s plan: the topic's first rows are not read from outbox_events_pending_key_idx in its order", kind)
				}
			}
		})
	}
}

// allVisible vacuums outbox_events until the visibility map covers every
// page, as a vacuum does on a quiet database: a transaction of another
// test open on the busy server holds the horizon back, and the planner then
// costs index-only scans as heap reads and picks another index.
func allVisible(t *testing.T, db *relaytest.DB) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var pages, visible int32
		if err := db.Pool.QueryRow(ctxT(t), `SELECT relpages, relallvisible FROM pg_class WHERE oid = 'outbox_events'::regclass`).Scan(&pages, &visible); err != nil {
			t.Fatal(err)
		}
		if visible >= pages {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox_events: %d of %d pages all-visible after vacuuming for 2 minutes", visible, pages)
		}
		time.Sleep(time.Second)
		if _, err := db.Pool.Exec(ctxT(t), "VACUUM ANALYZE outbox_events"); err != nil {
			t.Fatal(err)
		}
	}
}
