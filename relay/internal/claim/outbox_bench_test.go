package claim_test

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
	"github.com/eventrelay/eventrelay/relaytest"
)

// The benchmarks below measure the publisher's statements through the
// claim and maintenance stores, the relay's own code. They work on the
// outbox of BENCH_DATABASE_URL (search_path BENCH_DATABASE_SCHEMA, migrated,
// its rows prepared by the caller, e.g. a benchmark harness with its own
// events); unset, on a fresh test database seeded with BENCH_EVENTS rows
// (20,000) over BENCH_KEYS ordering keys (1,000) of BENCH_PAYLOAD_BYTES
// (300) each. BENCH_BULK (500) is the claim size. Each reports its figure
// with b.ReportMetric, e.g.
//
//	go test -run '^$' -bench 'Drain$' -benchtime 1x ./relay/internal/claim/

// outboxBench is a benchmark's outbox: the pool and every partition (one
// replica owning them all).
type outboxBench struct {
	pool  *pgxpool.Pool
	store *claim.Store
	parts []int32
	// seed refills a fresh database's outbox with published rows pending
	// again; nil on a caller's database, whose rows are used once.
	seed func(b *testing.B, published bool)
}

func benchEnv(b *testing.B, name string, def int) int {
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

func newOutboxBench(b *testing.B) outboxBench {
	ctx := context.Background()
	if url := os.Getenv("BENCH_DATABASE_URL"); url != "" {
		pc, err := relay.PoolConfig(url, os.Getenv("BENCH_DATABASE_SCHEMA"))
		if err != nil {
			b.Fatalf("BENCH_DATABASE_URL, BENCH_DATABASE_SCHEMA: %v", err)
		}
		pc.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pool.Close)
		return outboxBench{pool: pool, store: claim.NewStore(pool), parts: fx.AllPartitions(b, pool)}
	}
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	events, keys, size := benchEnv(b, "BENCH_EVENTS", 20_000), benchEnv(b, "BENCH_KEYS", 1_000), benchEnv(b, "BENCH_PAYLOAD_BYTES", 300)
	ob := outboxBench{pool: db.Pool, store: claim.NewStore(db.Pool), parts: fx.AllPartitions(b, db.Pool)}
	ob.seed = func(b *testing.B, published bool) {
		b.Helper()
		status := "pending"
		if published {
			status = "published"
		}
		if _, err := db.Pool.Exec(ctx, `TRUNCATE outbox_events, outbox_claims`); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `
			INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
			                           ordering_key, topic, payload, occurred_at, status, published_at)
			SELECT gen_random_uuid(), 'item', 'k' || (g % $2), g / $2 + 1, 'test.item.updated',
			       'k' || (g % $2), 'test-items', decode(repeat('ab', $3), 'hex'), now(),
			       $4, CASE WHEN $4 = 'published' THEN now() END
			FROM generate_series(0, $1 - 1) AS g`, events, keys, size, status); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE outbox_events`); err != nil {
			b.Fatal(err)
		}
	}
	ob.seed(b, false)
	return ob
}

// claimMark claims up to bulk rows and marks them published, as a
// publisher records a batch Pub/Sub accepted; it returns the rows and the
// claim's and the mark's durations.
func (ob outboxBench) claimMark(ctx context.Context, worker string, bulk int) ([]claim.Event, time.Duration, time.Duration, error) {
	token := uuid.Must(uuid.NewV7())
	t0 := time.Now()
	evs, err := ob.store.Claim(ctx, claim.Request{Worker: worker, Token: token, Limit: bulk, Lease: 30 * time.Second, Partitions: ob.parts})
	if err != nil || len(evs) == 0 {
		return evs, time.Since(t0), 0, err
	}
	t1 := time.Now()
	var o claim.Outcomes
	for _, e := range evs {
		o.Published = append(o.Published, claim.Published{ID: e.ID, MessageID: "bench-" + strconv.FormatInt(e.ID, 10)})
	}
	a, err := ob.store.Mark(ctx, token, o)
	if err == nil && len(a.Published) != len(evs) {
		err = errors.New("marking published: " + strconv.Itoa(len(a.Published)) + " of " + strconv.Itoa(len(evs)) + " rows matched their token")
	}
	return evs, t1.Sub(t0), time.Since(t1), err
}

// pending counts the rows not yet published.
func (ob outboxBench) pending(ctx context.Context) (int, error) {
	var n int
	err := ob.pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE status IN ('pending', 'publishing')`).Scan(&n)
	return n, err
}

// BenchmarkDrain claims and marks every pending row with BENCH_WORKERS (1)
// concurrent loops of BENCH_BULK rows: the claim+mark ceiling of the
// database, with no Pub/Sub in between. Metric: events/s.
func BenchmarkDrain(b *testing.B) {
	ob := newOutboxBench(b)
	b.ResetTimer()
	workers, bulk := benchEnv(b, "BENCH_WORKERS", 1), benchEnv(b, "BENCH_BULK", 500)
	ctx := context.Background()
	var moved int
	var took time.Duration
	for i := range b.N {
		if i > 0 {
			if ob.seed == nil {
				b.Fatal("a caller's outbox drains once: run with -benchtime 1x")
			}
			b.StopTimer()
			ob.seed(b, false)
			b.StartTimer()
		}
		start := time.Now()
		n, err := ob.drain(ctx, workers, bulk)
		if err != nil {
			b.Fatal(err)
		}
		moved, took = moved+n, took+time.Since(start)
	}
	b.ReportMetric(float64(moved)/took.Seconds(), "events/s")
	b.ReportMetric(float64(moved)/float64(b.N), "events/op")
}

// drain runs workers claim+mark loops until no row is pending and returns
// how many rows they moved.
func (ob outboxBench) drain(ctx context.Context, workers, bulk int) (int, error) {
	var (
		mu    sync.Mutex
		total int
		first error
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for w := range workers {
		wg.Go(func() {
			name := "bench-drain-" + strconv.Itoa(w)
			for ctx.Err() == nil {
				evs, _, _, err := ob.claimMark(ctx, name, bulk)
				if err == nil && len(evs) == 0 {
					// Nothing claimable: done, or the rest waits behind
					// another worker's in-flight rows of the same keys.
					var left int
					if left, err = ob.pending(ctx); err == nil && left == 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
				mu.Lock()
				if err != nil && first == nil && !errors.Is(err, context.Canceled) {
					first = err
					cancel()
				}
				total += len(evs)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return total, first
}

// BenchmarkClaimMark times b.N claims of BENCH_BULK rows, each followed by
// its mark; after each, copies of the claimed rows (same keys and payloads,
// versions far above the originals') are inserted so the pending count
// stays put. Metrics: claim-p50-ms, claim-p99-ms, mark-p50-ms. Each claim
// must get a full batch (or every pending row). BENCH_PLAN_FILE, when set,
// receives the EXPLAIN (ANALYZE, BUFFERS) of one more claim, rolled back.
func BenchmarkClaimMark(b *testing.B) {
	ob := newOutboxBench(b)
	b.ResetTimer()
	bulk := benchEnv(b, "BENCH_BULK", 500)
	ctx := context.Background()
	size, err := ob.pending(ctx)
	if err != nil {
		b.Fatal(err)
	}
	claims, marks := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	for range b.N {
		evs, c, m, err := ob.claimMark(ctx, "bench-claim", bulk)
		if err != nil {
			b.Fatal(err)
		}
		if len(evs) != min(bulk, size) {
			b.Fatalf("claim with %d pending returned %d rows, want %d", size, len(evs), min(bulk, size))
		}
		claims, marks = append(claims, c), append(marks, m)
		b.StopTimer()
		if err := ob.topUp(ctx, evs); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(percentileMs(claims, 50), "claim-p50-ms")
	b.ReportMetric(percentileMs(claims, 99), "claim-p99-ms")
	b.ReportMetric(percentileMs(marks, 50), "mark-p50-ms")
	if path := os.Getenv("BENCH_PLAN_FILE"); path != "" {
		plan, err := explainClaim(ctx, ob.pool, ob.parts, bulk)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// topUp inserts a pending copy of each claimed row. A copy's version is
// its original's plus 10^9, above any version a seeding tool writes, so the
// copies never collide with the aggregates' next events (nor with each
// other: a copy of a copy adds another 10^9).
func (ob outboxBench) topUp(ctx context.Context, evs []claim.Event) error {
	ids := make([]int64, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	_, err := ob.pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                           schema_version, ordering_key, topic, headers, payload, occurred_at)
		SELECT gen_random_uuid(), aggregate_type, aggregate_id, aggregate_version + 1000000000, event_type,
		       schema_version, ordering_key, topic, headers, payload, now()
		FROM outbox_events WHERE id = ANY($1) ORDER BY id`, ids)
	return err
}

// percentileMs is the p-th percentile (nearest rank) of ds in milliseconds.
func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s))+0.5) - 1
	return float64(s[min(max(i, 0), len(s)-1)]) / float64(time.Millisecond)
}

// BenchmarkDeletePublished deletes every published row in batches of
// BENCH_BATCH (10,000) with the retention round's statement (retention
// 0: everything published so far). Metrics: rows/s, rows/op.
func BenchmarkDeletePublished(b *testing.B) {
	ob := newOutboxBench(b)
	b.ResetTimer()
	batch := benchEnv(b, "BENCH_BATCH", 10_000)
	ctx := context.Background()
	m := upkeep.NewStore(ob.pool)
	var deleted int64
	var took time.Duration
	for i := range b.N {
		if ob.seed != nil {
			b.StopTimer()
			ob.seed(b, true)
			b.StartTimer()
		} else if i > 0 {
			b.Fatal("a caller's outbox is deleted once: run with -benchtime 1x")
		}
		start := time.Now()
		for {
			n, err := m.DeletePublished(ctx, 0, batch)
			if err != nil {
				b.Fatal(err)
			}
			deleted += n
			if n < int64(batch) {
				break
			}
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(deleted)/took.Seconds(), "rows/s")
	b.ReportMetric(float64(deleted)/float64(b.N), "rows/op")
}

// BenchmarkPacedClaims runs the publisher's claim and mark alone, as a
// publisher with nothing but its statements would: every BENCH_COOLDOWN_MS
// (250) one claim of up to BENCH_BULK rows, marked published at once, until
// BENCH_ROWS (1,000) rows were published, or, with BENCH_STOP=stdin, until
// standard input closes (the caller saw its writers' rows published), or
// BENCH_TIMEOUT_S (300) passed; meanwhile writers may fill the outbox of
// BENCH_DATABASE_URL. Metrics: claims that returned rows
// (claims-nonempty), claims that did not (claims-empty), rows published
// (rows).
func BenchmarkPacedClaims(b *testing.B) {
	ob := newOutboxBench(b)
	b.ResetTimer()
	bulk, want := benchEnv(b, "BENCH_BULK", 500), benchEnv(b, "BENCH_ROWS", 1_000)
	cooldown := time.Duration(benchEnv(b, "BENCH_COOLDOWN_MS", 250)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(benchEnv(b, "BENCH_TIMEOUT_S", 300))*time.Second)
	defer cancel()
	stopped := make(chan struct{})
	if os.Getenv("BENCH_STOP") == "stdin" {
		want = math.MaxInt
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin) // ends at EOF (or a read error: stop too)
			close(stopped)
		}()
	}
	var nonEmpty, empty, rows int
	for range b.N {
		nonEmpty, empty, rows = 0, 0, 0
		if ob.seed != nil {
			b.StopTimer()
			ob.seed(b, false)
			b.StartTimer()
		}
		tick := time.NewTicker(cooldown)
	paced:
		for rows < want {
			select {
			case <-ctx.Done():
				tick.Stop()
				b.Fatalf("%d rows published: %v", rows, ctx.Err())
			case <-stopped:
				break paced
			case <-tick.C:
			}
			evs, _, _, err := ob.claimMark(ctx, "bench-paced", bulk)
			if err != nil {
				tick.Stop()
				b.Fatalf("after %d rows: %v", rows, err)
			}
			if len(evs) == 0 {
				empty++
			} else {
				nonEmpty++
				rows += len(evs)
			}
		}
		tick.Stop()
	}
	b.ReportMetric(float64(nonEmpty), "claims-nonempty")
	b.ReportMetric(float64(empty), "claims-empty")
	b.ReportMetric(float64(rows), "rows")
}
