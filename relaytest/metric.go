package relaytest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// ScrapeMetrics reads the Prometheus text a process serves at url (a
// daemon's /metrics, for an end-to-end test that runs the relay or a
// projector as a process: what Metric reads in process) into one value
// per sample: counters, gauges and untyped samples by value, a
// histogram as name_count and name_sum. A sample's key is its name, or
// name{k=v,...} with its labels sorted by name. ctx bounds the request.
func ScrapeMetrics(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := sampleKey(name, m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[key] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[sampleKey(name+"_count", m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
				out[sampleKey(name+"_sum", m.GetLabel())] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out, nil
}

func sampleKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	sorted := slices.SortedFunc(slices.Values(labels), func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	parts := make([]string, 0, len(sorted))
	for _, l := range sorted {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
