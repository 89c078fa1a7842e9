package check

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
)

// Metric is one series family a daemon exports.
type Metric struct {
	Name string
	// Global: every replica reports the same value (its help says to
	// aggregate with max()); sum() over replicas would multiply it.
	Global bool
}

// describer collects the descriptors of everything registered on it.
type describer struct{ descs []*prometheus.Desc }

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		d.descs = append(d.descs, desc)
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// relayMetrics describes the relay's metrics (relay.DescribeMetrics).
type relayMetrics struct{}

func (relayMetrics) Describe(ch chan<- *prometheus.Desc) { relay.DescribeMetrics(ch) }
func (relayMetrics) Collect(chan<- prometheus.Metric)    {}

// projectorMetrics describes the projector's metrics (projector.DescribeMetrics).
type projectorMetrics struct{}

func (projectorMetrics) Describe(ch chan<- *prometheus.Desc) { projector.DescribeMetrics(ch) }
func (projectorMetrics) Collect(chan<- prometheus.Metric)    {}

var descRE = regexp.MustCompile(`fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)"`)

// ExportedMetrics lists the families the daemons' own metric constructors
// create (publisher, projector, and the readiness series every /metrics
// serves), read from their descriptors rather than from a copied list.
func ExportedMetrics() (map[string]Metric, error) {
	d := &describer{}
	d.MustRegister(relayMetrics{})
	d.MustRegister(projectorMetrics{})
	d.MustRegister(health.ReadinessCollector())
	out := map[string]Metric{}
	for _, desc := range d.descs {
		m := descRE.FindStringSubmatch(desc.String())
		if m == nil {
			return nil, fmt.Errorf("cannot read descriptor %s", desc)
		}
		out[m[1]] = Metric{Name: m[1], Global: strings.Contains(m[2], "never sum()")}
	}
	return out, nil
}

var (
	metricTokenRE = regexp.MustCompile(`\b(outbox|projector|eventrelay|catalog)_[a-zA-Z0-9_]+`)
	labelsRE      = regexp.MustCompile(`\{[^}]*\}`)
)

// QueryProblems reports metric names in expr that no daemon exports, and
// sum()/avg() applied directly to a global gauge.
func QueryProblems(expr string, exported map[string]Metric) []string {
	var out []string
	bare := labelsRE.ReplaceAllString(expr, "")
	for _, name := range metricTokenRE.FindAllString(bare, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if _, ok := exported[base]; !ok {
				base = strings.TrimSuffix(base, suffix)
			}
		}
		if _, ok := exported[base]; !ok {
			out = append(out, fmt.Sprintf("metric %s is not exported by any daemon", name))
		}
	}
	var globals []string
	for n, m := range exported {
		if m.Global {
			globals = append(globals, regexp.QuoteMeta(n))
		}
	}
	sort.Strings(globals)
	if len(globals) > 0 {
		sumRE := regexp.MustCompile(`\b(sum|avg)\s*(?:(?:by|without)\s*\([^)]*\))?\s*\(\s*(` + strings.Join(globals, "|") + `)\b`)
		if m := sumRE.FindStringSubmatch(bare); m != nil {
			out = append(out, fmt.Sprintf("%s(%s): every replica reports the same %s; use max()", m[1], m[2], m[2]))
		}
	}
	return out
}
