package relaytest

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventrelay/eventrelay/internal/telemetry/telemetrytest"
)

// RecordSpans installs, until t ends, a global tracer provider (with the
// W3C trace-context propagator) that records every span in the returned
// recorder, as a daemon installs its exporting one: a test asserts the
// spans of its writes (Kratos' server span, the traceparent an outbox row
// carries) and of the relay and projector (publish, process). Call it
// first in the test, before building what reads the global provider, so
// the previous provider is restored after the pipeline under test stopped.
// A test that calls it must not run in parallel.
func RecordSpans(t testing.TB) *tracetest.SpanRecorder {
	t.Helper()
	return telemetrytest.Global(t)
}

// SpanAttr returns the value of s's attribute key as a string, "" when s
// has none (e.g. "eventrelay.event_id", "eventrelay.outcome").
func SpanAttr(s sdktrace.ReadOnlySpan, key string) string { return telemetrytest.Attr(s, key) }
