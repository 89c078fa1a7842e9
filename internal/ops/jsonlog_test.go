package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// TestJSONHandlerWritesCloudLoggingFields: severity and message as Cloud
// Logging reads them, and the trace fields of a record's span.
func TestJSONHandlerWritesCloudLoggingFields(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(JSONHandler(&buf, slog.LevelDebug, "my-project")).With("service", "publisher")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	log.WarnContext(ctx, "claim failed", "error", "boom")
	log.Debug("tick")
	log.Error("down")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"severity": "WARNING", "message": "claim failed", "service": "publisher", "error": "boom",
		"logging.googleapis.com/trace":  "projects/my-project/traces/4bf92f3577b34da6a3ce929d0e0e4736",
		"logging.googleapis.com/spanId": "00f067aa0ba902b7", "logging.googleapis.com/trace_sampled": true}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %v, want %v (line %s)", k, first[k], v, lines[0])
		}
	}
	if _, ok := first["level"]; ok {
		t.Errorf("slog's level key is still there: %s", lines[0])
	}
	if !strings.Contains(lines[1], `"severity":"DEBUG"`) || strings.Contains(lines[1], "logging.googleapis.com/trace") {
		t.Errorf("a record without a span: %s", lines[1])
	}
	if !strings.Contains(lines[2], `"severity":"ERROR"`) {
		t.Errorf("error line: %s", lines[2])
	}
}
