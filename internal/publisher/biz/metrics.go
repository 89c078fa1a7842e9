package biz

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Metrics are the relay's Prometheus collectors (names from DESIGN.md).
// Gauges read from the database (lag, oldest age, stuck, failed) describe
// the whole outbox and are the same on every replica: aggregate with max().
type Metrics struct {
	Lag              prometheus.Gauge
	OldestAge        prometheus.Gauge
	Inflight         prometheus.Gauge
	Stuck            prometheus.Gauge
	FailedRows       prometheus.Gauge
	Processed        prometheus.Counter
	Failed           *prometheus.CounterVec
	RetryScheduled   prometheus.Counter
	TerminalFailed   *prometheus.CounterVec
	Released         prometheus.Counter
	Fenced           prometheus.Counter
	Takeovers        prometheus.Counter
	RetentionDeleted prometheus.Counter
	StoreErrors      *prometheus.CounterVec
	Latency          prometheus.Histogram
	ClaimBatchSize   prometheus.Histogram
	ClaimDuration    prometheus.Histogram
	EmptyClaims      prometheus.Counter
	WakeupArmed      prometheus.Gauge
}

// globalGauge ends the help of the gauges read from the whole outbox table:
// every replica reports the same value, so sum() over replicas multiplies
// it (deploy/check refuses rules and panels that do).
const globalGauge = "Global: every replica reports the same value; aggregate with max(), never sum()."

// NewMetrics creates the collectors and registers them on reg; it fails
// when reg already holds them (e.g. a second relay on one registry).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
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
		StoreErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "outbox_store_errors_total",
			Help: "Failed outbox database operations by operation."}, []string{"op"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_publish_latency_seconds",
			Help:    "Commit to publish latency: published_at - created_at.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20)}),
		ClaimBatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_claim_batch_size",
			Help:    "Rows per non-empty claim.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14)}),
		ClaimDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "outbox_claim_duration_seconds",
			Help:    "Duration of claim transactions (serialized across replicas).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
		EmptyClaims: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_empty_claims_total",
			Help: "Claims that found no ready row (idle polls, confirmations before waiting for a NOTIFY)."}),
		WakeupArmed: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_wakeup_armed",
			Help: "1 while this replica is idle and has asked writers to NOTIFY; 0 while it claims after each fetch cooldown by itself."}),
	}
	for _, c := range []prometheus.Collector{m.Lag, m.OldestAge, m.Inflight, m.Stuck, m.FailedRows, m.Processed, m.Failed,
		m.RetryScheduled, m.TerminalFailed, m.Released, m.Fenced, m.Takeovers, m.RetentionDeleted,
		m.StoreErrors, m.Latency, m.ClaimBatchSize, m.ClaimDuration, m.EmptyClaims, m.WakeupArmed} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the relay's metrics: %w", err)
		}
	}
	// Export every reason from the start so dashboards and alerts see zeros.
	for _, r := range errclass.All {
		m.Failed.WithLabelValues(string(r))
		if !r.Transient() {
			m.TerminalFailed.WithLabelValues(string(r))
		}
	}
	return m, nil
}
