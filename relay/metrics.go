package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/partitions"
)

// metrics are the relay's Prometheus collectors. Gauges read from the
// database (lag, oldest age, stuck, failed, index sizes) describe the
// whole outbox and are the same on every replica: aggregate with max().
type metrics struct {
	Lag              prometheus.Gauge
	OldestAge        prometheus.Gauge
	Inflight         prometheus.Gauge
	Stuck            prometheus.Gauge
	FailedRows       prometheus.Gauge
	StatsRefreshed   prometheus.Gauge
	Processed        prometheus.Counter
	Failed           *prometheus.CounterVec
	RetryScheduled   prometheus.Counter
	TerminalFailed   *prometheus.CounterVec
	Released         prometheus.Counter
	Fenced           prometheus.Counter
	Takeovers        prometheus.Counter
	RetentionDeleted prometheus.Counter
	IndexBytes       *prometheus.GaugeVec
	Reindexed        *prometheus.CounterVec
	ReindexFailed    prometheus.Counter
	StoreErrors      *prometheus.CounterVec
	Latency          prometheus.Histogram
	ClaimBatchSize   prometheus.Histogram
	ClaimDuration    prometheus.Histogram
	EmptyClaims      prometheus.Counter
	WakeupArmed      prometheus.Gauge
	PartitionsOwned  prometheus.Gauge
	PartitionMoves   *prometheus.CounterVec
	PublishBlocked   *prometheus.GaugeVec
	StoreBlocked     *prometheus.GaugeVec
	Stalled          prometheus.Gauge
	SubsDetached     *prometheus.GaugeVec
}

// storeOps are the op labels of outbox_store_errors_total; "complete" is
// mark, the batch's outcome writes.
var storeOps = []string{"claim", "complete", "release", "extend_lease", "reclaim", "stats", "retention", "wakeup", "partition_heartbeat", "partition_leave"}

// globalGauge ends the help of the gauges read from the whole outbox table:
// every replica reports the same value, so sum() over replicas multiplies
// it (deploy/check refuses rules and panels that do).
const globalGauge = "Global: every replica reports the same value; aggregate with max(), never sum()."

// DescribeMetrics sends the descriptors of every metric a Relay registers
// on Options.Registerer (names, help, labels), to check dashboards and
// alert rules against them. The help of a gauge that every replica
// reports alike ends with "aggregate with max(), never sum()".
func DescribeMetrics(ch chan<- *prometheus.Desc) {
	m := newCollectors()
	for _, c := range append(m.collectors(), newLogCollectors().collectors()...) {
		c.Describe(ch)
	}
}

// newMetrics creates the collectors and registers them on reg; it fails
// when reg already holds them (e.g. a second relay on one registry).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := newCollectors()
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the relay's metrics: %w", err)
		}
	}
	// Export every reason and operation from the start so dashboards and
	// alerts see zeros.
	for _, op := range storeOps {
		m.StoreErrors.WithLabelValues(op)
	}
	for _, r := range []string{"acquired", "released", "lost"} {
		m.PartitionMoves.WithLabelValues(r)
	}
	for _, r := range errclass.All {
		m.Failed.WithLabelValues(string(r))
		if !r.Transient() {
			m.TerminalFailed.WithLabelValues(string(r))
		}
	}
	return m, nil
}

// partitions are the collectors partition ownership updates.
func (m *metrics) partitions() partitions.Metrics {
	return partitions.Metrics{StoreErrors: m.StoreErrors, PartitionsOwned: m.PartitionsOwned, PartitionMoves: m.PartitionMoves}
}

// newCollectors creates the collectors, unregistered.
func newCollectors() *metrics {
	return &metrics{
		Lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_lag_events",
			Help: "Outbox rows in status pending (ready, waiting for a retry, or blocked behind their key's head). " + globalGauge}),
		OldestAge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_oldest_age_seconds",
			Help: "Age of the oldest pending outbox row (0 when none). " + globalGauge}),
		Inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_inflight_events",
			Help: "Rows this replica has claimed and not yet completed."}),
		Stuck: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_stuck_processing_events",
			Help: "Rows in publishing with an expired lease or over max_processing (reclaimed at the next reclaim tick). " + globalGauge}),
		FailedRows: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_failed_events",
			Help: "Rows in status failed (terminal; need replay). " + globalGauge}),
		StatsRefreshed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_stats_refreshed_timestamp_seconds",
			Help: "Unix time this replica last read the outbox-wide gauges (lag, oldest age, stuck, failed); 0 until the first read. While reads fail those gauges keep their last value: alert on time() minus this."}),
		Processed: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_processed_total",
			Help: "Rows published and marked published by this replica."}),
		Failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_failed_total",
			Help: "Failed publish attempts by error reason (transient and terminal)."}, []string{"reason"}),
		RetryScheduled: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_retry_scheduled_total",
			Help: "Rows put back to pending with backoff after a transient failure."}),
		TerminalFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_terminal_failed_total",
			Help: "Rows moved to failed, by error_reason."}, []string{"reason"}),
		Released: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_released_total",
			Help: "Claimed rows handed back to pending without an attempt (behind a failed head, or at shutdown)."}),
		Fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_fenced_writes_total",
			Help: "Row writes refused by the lock_token fence (the claim was lost)."}),
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_takeovers_total",
			Help: "Rows with an expired claim reclaimed by this replica."}),
		RetentionDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_retention_deleted_total",
			Help: "Published rows deleted after the retention period."}),
		IndexBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_index_bytes",
			Help: "Size on disk of each outbox index (refreshed every retention interval). " + globalGauge}, []string{"index"}),
		Reindexed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_reindex_total",
			Help: "Bloated outbox indexes rebuilt (REINDEX CONCURRENTLY) by this replica."}, []string{"index"}),
		ReindexFailed: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_reindex_failed_total",
			Help: "Failed outbox index checks or rebuilds of this replica (logged; tried again after the next retention round)."}),
		StoreErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_store_errors_total",
			Help: "Failed outbox database operations by operation."}, []string{"op"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_publish_latency_seconds",
			Help:    "Commit to publish latency: published_at - created_at.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20)}),
		ClaimBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_claim_batch_size",
			Help:    "Rows per non-empty claim.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		ClaimDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_claim_duration_seconds",
			Help:    "Duration of claim transactions (serialized per outbox partition).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		EmptyClaims: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_empty_claims_total",
			Help: "Claims that found no ready row (idle polls, confirmations before waiting for a NOTIFY)."}),
		WakeupArmed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_wakeup_armed",
			Help: "1 while this replica is idle and has asked writers to NOTIFY; 0 while it claims after each fetch cooldown by itself."}),
		PartitionsOwned: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_partitions_owned",
			Help: "Outbox partitions this replica owns (claims from); the replicas' sum is the partition count when balanced."}),
		PartitionMoves: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_partition_moves_total",
			Help: "Outbox partition ownership changes of this replica: acquired, released (above its fair share or at shutdown), lost (lease ended, taken over)."},
			[]string{"reason"}),
		PublishBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_publish_blocked",
			Help: "1 while this replica holds publishing to a topic because Pub/Sub or its environment failed (unavailable, timeout, server_error, rate_limited, precondition_failed, topic_not_found, permission_denied); its rows wait pending without spending attempts, none fails. Cleared by the first successful publish to the topic."},
			[]string{"topic", "reason"}),
		StoreBlocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_store_blocked",
			Help: "1 while Postgres refuses one of this replica's statements (claim, mark, extend_lease, reclaim) for a missing privilege (SQLSTATE 42501): claims wait with backoff, outcomes are retried with the lease kept, no row fails. Cleared when the statement succeeds."},
			[]string{"statement", "reason"}),
		Stalled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_stalled",
			Help: "1 while this replica owns partitions, the oldest pending outbox row is older than stall_after and the replica published nothing for stall_after (refreshed every stats interval); 0 otherwise."}),
		SubsDetached: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_subscription_detached",
			Help: "1 while a subscription declared for the topic is missing, detached or attached elsewhere: publishing to the topic is held (rows wait pending); 0 once attached. Refreshed every subscription check interval."},
			[]string{"topic", "subscription"}),
	}
}

// collectors lists every collector of m.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Lag, m.OldestAge, m.Inflight, m.Stuck, m.FailedRows, m.StatsRefreshed, m.Processed, m.Failed,
		m.RetryScheduled, m.TerminalFailed, m.Released, m.Fenced, m.Takeovers, m.RetentionDeleted,
		m.IndexBytes, m.Reindexed, m.ReindexFailed, m.StoreErrors, m.Latency, m.ClaimBatchSize, m.ClaimDuration, m.EmptyClaims, m.WakeupArmed,
		m.PartitionsOwned, m.PartitionMoves, m.PublishBlocked, m.StoreBlocked, m.Stalled, m.SubsDetached}
}
