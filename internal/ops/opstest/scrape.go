package opstest

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ScrapeMetrics reads a daemon's /metrics (Prometheus text) at url into one
// value per sample, keyed `name` or `name{k=v,...}`: counters, gauges and
// untyped samples by value, histograms as name_count and name_sum.
func ScrapeMetrics(ctx context.Context, client *http.Client, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
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
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}
