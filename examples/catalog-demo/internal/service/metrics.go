package service

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
)

// ReadMetrics are the metrics of the read paths: catalog_reads_total{path,
// outcome} and catalog_read_wait_seconds{path} (the wait of reads with
// consistency tokens).
type ReadMetrics struct {
	reads *prometheus.CounterVec
	wait  *prometheus.HistogramVec
}

// NewReadMetrics registers the read metrics on reg.
func NewReadMetrics(reg prometheus.Registerer) (*ReadMetrics, error) {
	m := &ReadMetrics{
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "catalog_reads_total",
			Help: "Reads by path (videos: Postgres read model, source: source table, search: search index, search_disabled: search switched off) and outcome of the consistency wait.",
		}, []string{"path", "outcome"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "catalog_read_wait_seconds",
			Help:    "Time reads with consistency tokens waited for the read model, by path.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2, 5, 10},
		}, []string{"path"}),
	}
	for _, c := range []prometheus.Collector{m.reads, m.wait} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Observer is the biz.Observer recording into m.
func (m *ReadMetrics) Observer() biz.Observer {
	return func(path string, waited time.Duration, outcome string) {
		m.reads.WithLabelValues(path, outcome).Inc()
		if outcome != "no_token" && outcome != "direct" {
			m.wait.WithLabelValues(path).Observe(waited.Seconds())
		}
	}
}

// NewObserver is m's Observer (a provider).
func NewObserver(m *ReadMetrics) biz.Observer { return m.Observer() }
