package data_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/relaytest"
)

// BenchmarkClaimWithBacklog measures one claim of 500 rows (and its
// release) with BENCH_PENDING (200,000) pending rows over 10,000 keys,
// 100,000 published rows and 2,000 rows in flight: the claim must cost
// about the batch, not the backlog.
//
//	BENCH_PENDING=1000000 go test -run '^$' -bench ClaimWithBacklog -benchtime 50x ./internal/publisher/data/
func BenchmarkClaimWithBacklog(b *testing.B) {
	pending := 200_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_PENDING")); err == nil && v > 0 {
		pending = v
	}
	db := relaytest.NewDB(b, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
		INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
		                           ordering_key, topic, payload, occurred_at, status, published_at)
		SELECT gen_random_uuid(), 'catalog.video', 'k' || (g % 10000), g / 10000 + 1, 'catalog.video.updated',
		       'k' || (g % 10000), 'catalog.video.events', '\x00'::bytea, now(),
		       CASE WHEN g < 100000 THEN 'published' ELSE 'pending' END, CASE WHEN g < 100000 THEN now() END
		FROM generate_series(0, 100000 + $1 - 1) AS g`, pending); err != nil {
		b.Fatal(err)
	}
	s := data.NewStore(db.Pool)
	all := pt.AllPartitions(b, s)
	if _, err := s.Claim(ctx, biz.ClaimRequest{Worker: "in-flight", Token: uuid.New(), Limit: 2000, Lease: time.Hour, Partitions: all}); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `VACUUM ANALYZE outbox_events`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		token := uuid.New()
		evs, err := s.Claim(ctx, biz.ClaimRequest{Worker: "bench", Token: token, Limit: 500, Lease: time.Minute, Partitions: all})
		if err != nil || len(evs) != 500 {
			b.Fatalf("claim: %d rows, %v", len(evs), err)
		}
		b.StopTimer()
		if _, err := s.Release(ctx, token, biz.Batch{Token: token, Events: evs}.IDs()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/claim")
}
