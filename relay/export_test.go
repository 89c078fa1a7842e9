package relay

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/relay/internal/partitions"
)

// PartitionMetrics registers a relay's collectors on reg and returns
// those partition ownership updates, for ownership driven by a test.
func PartitionMetrics(reg prometheus.Registerer) (partitions.Metrics, error) {
	m, err := newMetrics(reg)
	if err != nil {
		return partitions.Metrics{}, err
	}
	return m.partitions(), nil
}

// Drain is Stop's drain without its logging: it returns ctx's error when
// ctx ends before the in-flight batches finished.
func Drain(ctx context.Context, r *Relay) error { return r.drain(ctx) }
