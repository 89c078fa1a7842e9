package embedded

import (
	"context"
	"io"
	"log/slog"

	klog "github.com/go-kratos/kratos/v2/log"

	"github.com/eventrelay/eventrelay/internal/ops"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/telemetry"
)

// Logger is the logger eventrelay's daemons write with, for a service to
// log alike: one JSON object a line on w in the shape Cloud Logging reads
// from a container's stdout ("severity" and "message"; for a record logged
// with a context that carries a span, the trace and span fields that link
// the line to its trace, in the project GOOGLE_CLOUD_PROJECT or else
// PUBSUB_PROJECT_ID names), at level and above, every line with
// "service" = service. Main logs with it unless Options.Logger is set.
func Logger(w io.Writer, level slog.Leveler, service string) *slog.Logger {
	return slog.New(ops.JSONHandler(w, level, ops.LogProject())).With("service", service)
}

// KratosLogger sends Kratos' own log lines (servers starting and
// stopping) to l, so that a process writes one log stream: pass it to
// kratos.Logger and klog.SetLogger.
func KratosLogger(l *slog.Logger) klog.Logger { return ops.KratosLogger(l) }

// Tracing installs the global OpenTelemetry tracer provider and the W3C
// propagator for service, configured by the standard OTEL_* environment,
// and returns the function that flushes and stops them (call it once the
// app stopped). Spans are exported only when asked (OTEL_TRACES_EXPORTER=otlp,
// or an OTLP endpoint, over http/protobuf or grpc per
// OTEL_EXPORTER_OTLP_PROTOCOL); otherwise no span is recorded, yet a
// caller's traceparent still reaches the outbox row and the messages.
// OTEL_SDK_DISABLED=true turns spans off. An invalid setting is an error
// naming the variable. Main calls it.
func Tracing(ctx context.Context, service string) (shutdown func(context.Context) error, err error) {
	return telemetry.Setup(ctx, service)
}

// RedactDatabaseURL is a Postgres connection string (URL or keyword/value
// form) with any password replaced, for logs, errors and pages. A
// malformed string is redacted as well as a valid one.
func RedactDatabaseURL(dsn string) string { return postgres.Redact(dsn) }
