package publisher_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestRetentionRoundRebuildsBloatedIndexes: a drained wave of 20,000 rows,
// published two days ago, leaves the pending indexes at the size of the
// wave. The relay's retention round deletes the rows and then rebuilds
// those two indexes, which shrink; an index under reindex_min_bytes
// (blocking) and the healthy primary key stay as they are. Every step is
// in the metrics.
func TestRetentionRoundRebuildsBloatedIndexes(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, pt.Topic)
	const rows = 20_000
	pt.PublishedWave(t, db.Pool, rows, time.Now().Add(-48*time.Hour))

	var pendingBefore int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT pg_relation_size('outbox_events_pending_idx')`).Scan(&pendingBefore); err != nil {
		t.Fatal(err)
	}
	const minBytes = 512 << 10
	if pendingBefore < 2*minBytes {
		t.Fatalf("the wave left outbox_events_pending_idx at %d bytes; the test needs more than %d", pendingBefore, 2*minBytes)
	}
	blocking := pt.IndexOID(t, db.Pool, "outbox_events_blocking_idx")
	pkey := pt.IndexOID(t, db.Pool, "outbox_events_pkey")

	cfg := pt.Config("relay", ps.Config)
	cfg.Outbox.Retention = conf.Duration(24 * time.Hour)
	cfg.Outbox.RetentionInterval = conf.Duration(200 * time.Millisecond)
	cfg.Outbox.ReindexBloatFactor = 4
	cfg.Outbox.ReindexMinBytes = minBytes
	r := pt.StartRelay(t, db.Pool, cfg)

	rebuilt := func(index string) float64 {
		return opstest.Metric(t, r.Registry, "outbox_reindex_total", map[string]string{"index": index})
	}
	pt.WaitFor(t, 30*time.Second, "the pending indexes rebuilt", func() bool {
		return rebuilt("outbox_events_pending_idx") >= 1 && rebuilt("outbox_events_pending_key_idx") >= 1
	})
	if n := opstest.Metric(t, r.Registry, "outbox_retention_deleted_total", nil); n != rows {
		t.Errorf("outbox_retention_deleted_total = %v, want %d", n, rows)
	}
	r.Stop(t)

	var pendingAfter int64
	if err := db.Pool.QueryRow(context.Background(), `SELECT pg_relation_size('outbox_events_pending_idx')`).Scan(&pendingAfter); err != nil {
		t.Fatal(err)
	}
	if pendingAfter > pendingBefore/20 {
		t.Errorf("outbox_events_pending_idx: %d bytes after the rebuild, %d before; want under 1/20", pendingAfter, pendingBefore)
	}
	if g := opstest.Metric(t, r.Registry, "outbox_index_bytes", map[string]string{"index": "outbox_events_pending_idx"}); g != float64(pendingAfter) {
		t.Errorf("outbox_index_bytes{outbox_events_pending_idx} = %v, want %d", g, pendingAfter)
	}
	if pt.IndexOID(t, db.Pool, "outbox_events_blocking_idx") != blocking || rebuilt("outbox_events_blocking_idx") != 0 {
		t.Error("outbox_events_blocking_idx (under reindex_min_bytes) was rebuilt")
	}
	// The primary key's entries are live until the deletion, and nothing
	// vacuums the table in between unless autovacuum does: only then may
	// it be rebuilt, and it is counted.
	if pt.IndexOID(t, db.Pool, "outbox_events_pkey") != pkey && rebuilt("outbox_events_pkey") != 1 {
		t.Error("outbox_events_pkey was replaced without being counted")
	}
	if n := opstest.Metric(t, r.Registry, "outbox_reindex_failed_total", nil); n != 0 {
		t.Errorf("outbox_reindex_failed_total = %v, want 0", n)
	}
}
