package health

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// readiness exports the /readyz outcome: the last result and how often it
// changed, so alerts see a flapping pod even when it flaps between scrapes.
type readiness struct {
	mu          sync.Mutex
	seen        bool
	ready       bool
	transitions float64
}

var (
	readyDesc = prometheus.NewDesc("eventrelay_ready",
		"1 when the last /readyz passed, 0 when it failed (absent before the first probe).", nil, nil)
	transitionsDesc = prometheus.NewDesc("eventrelay_readiness_transitions_total",
		"Changes of the /readyz outcome (ready <-> not ready) since start.", nil, nil)
)

// record notes one /readyz outcome.
func (r *readiness) record(ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen && r.ready != ok {
		r.transitions++
	}
	r.seen, r.ready = true, ok
}

// Describe implements prometheus.Collector.
func (r *readiness) Describe(ch chan<- *prometheus.Desc) {
	ch <- readyDesc
	ch <- transitionsDesc
}

// Collect implements prometheus.Collector.
func (r *readiness) Collect(ch chan<- prometheus.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen {
		v := 0.0
		if r.ready {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, v)
	}
	ch <- prometheus.MustNewConstMetric(transitionsDesc, prometheus.CounterValue, r.transitions)
}

// ReadinessCollector is an unattached collector of the readiness series,
// for tools that list what /metrics serves (deploy/check).
func ReadinessCollector() prometheus.Collector { return &readiness{} }
