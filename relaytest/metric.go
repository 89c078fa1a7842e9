package relaytest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
)

// Metric is the value in g of the counter or gauge name (of a histogram,
// its sample count) summed over the series whose labels include labels;
// 0 when there is none. g is the registry the service's engines register
// on (embedded.Engines.Metrics, projector.Options.Registerer).
func Metric(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	return opstest.Metric(t, g, name, labels)
}
