package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
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

// TestSetupWithoutExporterIsNoopButPropagates: with no exporter asked for,
// spans are not recorded (the no-op provider), and a span started under a
// received trace context carries that context on, so the outbox row and
// the message attributes still name the caller's trace.
func TestSetupWithoutExporterIsNoopButPropagates(t *testing.T) {
	shutdown, err := setup(context.Background(), "test", lookupOf(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background()) //nolint:errcheck // no-op
	_, root := otel.Tracer("test").Start(context.Background(), "root")
	if root.IsRecording() || root.SpanContext().IsValid() {
		t.Errorf("without an exporter a root span is recording=%v valid=%v, want a no-op span", root.IsRecording(), root.SpanContext().IsValid())
	}
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), propagation.MapCarrier{"traceparent": parent})
	ctx, child := otel.Tracer("test").Start(ctx, "child")
	if child.IsRecording() {
		t.Error("without an exporter a child span is recording")
	}
	out := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, out)
	if out["traceparent"] != parent {
		t.Errorf("traceparent after a no-op span = %q, want the received %q", out["traceparent"], parent)
	}
}
