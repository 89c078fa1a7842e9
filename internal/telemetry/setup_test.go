package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
)

func lookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExporting(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		want    bool
		wantErr bool
	}{
		{env: map[string]string{}, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: true},
	} {
		got, err := Exporting(lookupOf(c.env))
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("Exporting(%v) = %v, %v; want %v, error %v", c.env, got, err, c.want, c.wantErr)
		}
	}
}

// TestSetupExportsOTLPHTTP: with an OTLP endpoint set, a finished span
// reaches the collector's /v1/traces on shutdown (a real HTTP exporter
// against an in-process receiver).
func TestSetupExportsOTLPHTTP(t *testing.T) {
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Method == http.MethodPost {
			posts.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL) // read by the exporter itself
	shutdown, err := setup(context.Background(), "test", lookupOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "unit")
	span.End()
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no OTLP export reached the collector")
	}
}

func TestSetupRefusesUnknownProtocol(t *testing.T) {
	_, err := setup(context.Background(), "test", lookupOf(map[string]string{
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}))
	if err == nil {
		t.Fatal("want an error naming OTEL_EXPORTER_OTLP_PROTOCOL")
	}
}
