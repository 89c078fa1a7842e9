package partitions_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/relay/internal/partitions"
)

// TestLeaveReleasesPartitionsAnUnseenHeartbeatTook checks that a stopping
// replica gives up every partition it owns in the database, including
// those a heartbeat acquired whose outcome the replica never saw: one
// cancelled at shutdown after its commit. Releasing only the partitions
// the replica knew of would leave the others waiting for their lease.
func TestLeaveReleasesPartitionsAnUnseenHeartbeatTook(t *testing.T) {
	t.Parallel()
	ctx, _, store := newStore(t)
	m := partitions.Metrics{
		StoreErrors:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "store_errors"}, []string{"op"}),
		PartitionsOwned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "owned"}),
		PartitionMoves:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "moves"}, []string{"reason"}),
	}
	own := partitions.NewOwnership(store, "replica-a", 10*time.Second, 2*time.Second, m, slog.New(slog.DiscardHandler))

	// The heartbeat the replica never saw the outcome of.
	hb, err := store.Heartbeat(ctx, partitions.HeartbeatRequest{Worker: "replica-a", TTL: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(hb.Acquired) == 0 || len(own.Partitions()) != 0 {
		t.Fatalf("setup: the heartbeat acquired %d partitions, the replica believes it owns %v", len(hb.Acquired), own.Partitions())
	}
	if err := own.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	owners, err := store.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range owners {
		if p.Owner != "" {
			t.Errorf("partition %d is still owned by %s after it left", p.Partition, p.Owner)
		}
	}
}
