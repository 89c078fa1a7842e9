package relaytest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func TestScrapeMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	published := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "published_total"}, []string{"topic", "outcome"})
	lag := prometheus.NewGauge(prometheus.GaugeOpts{Name: "lag_seconds"})
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batch_size", Buckets: []float64{1, 10}})
	reg.MustRegister(published, lag, batch)
	published.WithLabelValues("orders", "ok").Add(3)
	lag.Set(1.5)
	batch.Observe(4)
	batch.Observe(6)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := ScrapeMetrics(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{
		"published_total{outcome=ok,topic=orders}": 3,
		"lag_seconds":      1.5,
		"batch_size_count": 2,
		"batch_size_sum":   10,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v; all: %v", key, v, ok, want, got)
		}
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	if _, err := ScrapeMetrics(ctx, gone.URL); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("scraping a 404: %v, want an error naming the status", err)
	}
}
