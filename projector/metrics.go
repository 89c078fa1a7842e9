package projector

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// metrics are the projector's Prometheus series, labelled by projection.
// One metrics serves every engine of a process.
type metrics struct {
	applied      *prometheus.CounterVec
	duplicate    *prometheus.CounterVec
	stale        *prometheus.CounterVec
	failed       *prometheus.CounterVec
	deadLettered *prometheus.CounterVec
	ackFailed    *prometheus.CounterVec
	inboxFailed  *prometheus.CounterVec
	inboxDeleted *prometheus.CounterVec
	retFailed    *prometheus.CounterVec
	inflight     *prometheus.GaugeVec
	latency      *prometheus.HistogramVec
	batchSize    *prometheus.HistogramVec
	recvErrors   *prometheus.CounterVec
	receiving    *prometheus.GaugeVec
	stalled      *prometheus.GaugeVec
	blocked      *prometheus.GaugeVec
	replaySkip   *prometheus.CounterVec
	detached     *prometheus.GaugeVec
}

// newMetrics creates the series and registers them on reg.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	byProjection := []string{"projection"}
	byReason := []string{"projection", "reason"}
	m := &metrics{
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_applied_total", Help: "Events applied to the read model.",
		}, byProjection),
		duplicate: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_duplicate_total", Help: "Deliveries of events the consumer had already applied (absorbed by the inbox).",
		}, byProjection),
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_stale_skipped_total", Help: "Events older than the read model's version, skipped.",
		}, byProjection),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_failed_total", Help: "Failed deliveries by reason (transient ones are redelivered).",
		}, byReason),
		deadLettered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_dead_lettered_total", Help: "Messages published to the dead-letter topic, by reason.",
		}, byReason),
		ackFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_ack_failed_total", Help: "Acks refused by Pub/Sub (exactly-once delivery); the message will be redelivered and deduplicated.",
		}, byProjection),
		inboxFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_inbox_record_failed_total", Help: "Inbox rows a non-transactional read model could not record after the read model accepted the events.",
		}, byProjection),
		inboxDeleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_inbox_deleted_total", Help: "Inbox rows deleted after the inbox retention age.",
		}, byProjection),
		retFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_inbox_retention_failed_total", Help: "Inbox retention rounds that failed (retried at the next interval).",
		}, byProjection),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_inflight", Help: "Messages being processed.",
		}, byProjection),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "projector_apply_latency_seconds",
			Help:    "From the event's occurred_at (the producing commit) to applied in the read model.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}, byProjection),
		batchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "projector_batch_size",
			Help:    "Messages per applied batch.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}, byProjection),
		recvErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_receive_errors_total", Help: "StreamingPull receive failures by reason; each is retried with backoff.",
		}, byReason),
		receiving: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_receiving", Help: "1 while the subscription is received, 0 while receiving failed and is being retried.",
		}, byProjection),
		stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_stalled", Help: "1 while the projection holds received messages but has acked none for its stall time (projector.Options.StallAfter).",
		}, byProjection),
		blocked: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_blocked", Help: "1 while the projection's stores refuse its identity (permission_denied: a missing grant, a revoked or rotated credential): its messages are held, none dead-lettered, until the privilege is granted.",
		}, byProjection),
		replaySkip: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "projector_replay_skipped_total", Help: "Messages a dead-letter replay republished for another subscription (attribute replay_for), acked without applying them.",
		}, byProjection),
		detached: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "projector_subscription_detached", Help: "1 while the projection's subscription is detached (its topic was deleted) or missing: it receives nothing; 0 once attached.",
		}, []string{"projection", "subscription"}),
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.applied, m.duplicate, m.stale, m.failed, m.deadLettered,
		m.ackFailed, m.inboxFailed, m.inboxDeleted, m.retFailed, m.inflight, m.latency, m.batchSize, m.recvErrors, m.receiving, m.stalled, m.blocked, m.replaySkip, m.detached}
}

// DescribeMetrics sends the descriptors of every projector_* series a
// Projector registers on Options.Registerer, without creating a
// Projector: for tools that list or check the exported metrics.
func DescribeMetrics(ch chan<- *prometheus.Desc) {
	m, _ := newMetrics(prometheus.NewRegistry()) // a fresh registry refuses nothing
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// count is the sum of vec's series labelled projection=name (over every
// reason of a series by reason).
func count(vec *prometheus.CounterVec, name string) int64 {
	ch := make(chan prometheus.Metric)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	var sum float64
	for s := range ch {
		var pb dto.Metric
		if err := s.Write(&pb); err != nil {
			continue
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "projection" && l.GetValue() == name {
				sum += pb.GetCounter().GetValue()
			}
		}
	}
	return int64(sum)
}

// projectionMetrics are the series of one projection.
type projectionMetrics struct {
	m               *metrics
	name            string
	applied         prometheus.Counter
	duplicate       prometheus.Counter
	stale           prometheus.Counter
	ackFailed       prometheus.Counter
	inboxFailed     prometheus.Counter
	inboxDeleted    prometheus.Counter
	retentionFailed prometheus.Counter
	inflight        prometheus.Gauge
	latency         prometheus.Observer
	batchSize       prometheus.Observer
	receiving       prometheus.Gauge
	stalled         prometheus.Gauge
	blocked         prometheus.Gauge
	replaySkipped   prometheus.Counter
}

func (m *metrics) forProjection(name string) *projectionMetrics {
	l := prometheus.Labels{"projection": name}
	return &projectionMetrics{
		m: m, name: name,
		applied:         m.applied.With(l),
		duplicate:       m.duplicate.With(l),
		stale:           m.stale.With(l),
		ackFailed:       m.ackFailed.With(l),
		inboxFailed:     m.inboxFailed.With(l),
		inboxDeleted:    m.inboxDeleted.With(l),
		retentionFailed: m.retFailed.With(l),
		inflight:        m.inflight.With(l),
		latency:         m.latency.With(l),
		batchSize:       m.batchSize.With(l),
		receiving:       m.receiving.With(l),
		stalled:         m.stalled.With(l),
		blocked:         m.blocked.With(l),
		replaySkipped:   m.replaySkip.With(l),
	}
}

func (p *projectionMetrics) failed(reason string) {
	p.m.failed.WithLabelValues(p.name, reason).Inc()
}

func (p *projectionMetrics) deadLettered(reason string) {
	p.m.deadLettered.WithLabelValues(p.name, reason).Inc()
}

func (p *projectionMetrics) receiveFailed(reason string) {
	p.m.recvErrors.WithLabelValues(p.name, reason).Inc()
}
