package projector_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projector"
)

// TestInboxRetentionLeavesOldRedeliveriesToTheVersionGuard shows that a
// replay older than Projection.InboxRetention is safe: once retention
// deleted the inbox row of an old event, its redelivery is no longer
// absorbed by the inbox; it reaches the handler, whose version guard skips
// it as stale, and the read model keeps the newer value.
func TestInboxRetentionLeavesOldRedeliveriesToTheVersionGuard(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	rowCalls := &calls{n: map[uuid.UUID]int{}}
	metrics := prometheus.NewRegistry()
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: metrics,
		Receive:                 projector.ReceiveOptions{NumGoroutines: 1, RetryMin: 50 * time.Millisecond},
		InboxRetentionInterval:  50 * time.Millisecond,
		InboxRetentionBatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	pr := pgProjection(t, counterRows(rowCalls), projector.BatchOptions{Linger: time.Millisecond, RetryBackoffMin: time.Millisecond})
	pr.InboxRetention = time.Hour
	register(t, p, pr)
	stop := run(t, p)

	total := func() (value, version int64) {
		_ = db.Pool.QueryRow(t.Context(), `SELECT total, version FROM order_totals WHERE order_id = 'c1'`).Scan(&value, &version)
		return value, version
	}
	inboxHas := func(id uuid.UUID) bool {
		var n int
		if err := db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM inbox_events WHERE event_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	v1, v2 := setEvent(t, "c1", 1, 10), setEvent(t, "c1", 2, 20)
	for _, ev := range []event{v1, v2} {
		publish(t, ps, "counters", ev)
		eventually(t, "c1 applied and recorded", func() bool {
			_, version := total()
			return version == ev.version && inboxHas(ev.id)
		})
	}

	// v1 was processed two hours ago, as far as the inbox knows: past the
	// retention of an hour. v2 is recent.
	if _, err := db.Pool.Exec(t.Context(), `UPDATE inbox_events SET processed_at = now() - interval '2 hours' WHERE event_id = $1`, v1.id); err != nil {
		t.Fatal(err)
	}
	label := map[string]string{"projection": "counters-pg"}
	eventually(t, "retention deleted v1's inbox row", func() bool {
		return !inboxHas(v1.id) && opstest.Metric(t, metrics, "projector_inbox_deleted_total", label) == 1
	})
	if !inboxHas(v2.id) {
		t.Fatal("retention deleted the recent inbox row of v2")
	}

	// Replay v1 (same event id), as relayctl replay --include-published
	// would after the retention.
	publish(t, ps, "counters", v1)
	eventually(t, "the replayed v1 skipped as stale", func() bool {
		return opstest.Metric(t, metrics, "projector_stale_skipped_total", label) == 1
	})
	if n := rowCalls.of(v1.id); n != 2 {
		t.Errorf("v1 reached the handler %d times, want 2 (its inbox row was deleted, so the replay is not a duplicate)", n)
	}
	if n := opstest.Metric(t, metrics, "projector_duplicate_total", label); n != 0 {
		t.Errorf("projector_duplicate_total = %v, want 0", n)
	}
	if value, version := total(); value != 20 || version != 2 {
		t.Errorf("after the replay of v1: c1 = %d at v%d, want 20 at v2", value, version)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}
