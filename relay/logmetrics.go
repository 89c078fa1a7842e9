package relay

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// logMetrics are ModeLog's own collectors, registered only in that mode.
type logMetrics struct {
	LagBytes   prometheus.Gauge
	KeepBytes  prometheus.Gauge
	LagSeconds prometheus.Gauge
	Reader     *prometheus.GaugeVec // state: active, standby
	Recovered  prometheus.Counter
	NewSlots   prometheus.Counter
}

// Reader states (outbox_log_reader{state}).
const (
	readerActive  = "active"
	readerStandby = "standby"
)

func newLogCollectors() *logMetrics {
	return &logMetrics{
		LagBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_log_slot_lag_bytes",
			Help: "WAL the log relay's slot retains: the current WAL position minus the slot's confirmed position (read by the active reader every StatsInterval, and after a session that ended on an error). " + globalGauge}),
		KeepBytes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_log_slot_wal_keep_bytes",
			Help: "Postgres' max_slot_wal_keep_size in bytes: a slot retaining more is invalidated (the relay then republishes from the table); -1: unlimited, a stalled slot can fill the disk. " + globalGauge}),
		LagSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "outbox_log_slot_lag_seconds",
			Help: "Age of the oldest committed transaction the active reader read and Pub/Sub has not acknowledged (0: none outstanding)."}),
		Reader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "outbox_log_reader",
			Help: "1 for this replica's state as the slot's reader: active (reads the slot) or standby (waits to take over)."}, []string{"state"}),
		Recovered: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_log_recovered_rows_total",
			Help: "Rows republished from the table because the slot was new or lost (duplicates of what was published, never a loss)."}),
		NewSlots: prometheus.NewCounter(prometheus.CounterOpts{Name: "outbox_log_slots_created_total",
			Help: "Replication slots the relay created: the first start, or a slot that was dropped or invalidated."}),
	}
}

func (m *logMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.LagBytes, m.KeepBytes, m.LagSeconds, m.Reader, m.Recovered, m.NewSlots}
}

func newLogMetrics(reg prometheus.Registerer) (*logMetrics, error) {
	m := newLogCollectors()
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the log relay's metrics: %w", err)
		}
	}
	m.state(readerStandby)
	return m, nil
}

// state sets this replica's reader state.
func (m *logMetrics) state(s string) {
	for _, st := range []string{readerActive, readerStandby} {
		v := 0.0
		if st == s {
			v = 1
		}
		m.Reader.WithLabelValues(st).Set(v)
	}
}
