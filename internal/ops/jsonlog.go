package ops

import (
	"context"
	"io"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/trace"
)

// JSONHandler is the daemons' log handler: one JSON object a line in the
// shape Cloud Logging reads from a GKE container's stdout — "severity"
// (DEBUG, INFO, WARNING, ERROR) and "message" instead of slog's "level"
// and "msg", and, for a record logged with a context that carries a
// span, "logging.googleapis.com/trace" (projects/<project>/traces/<id>,
// or the bare id without a project), "logging.googleapis.com/spanId" and
// "logging.googleapis.com/trace_sampled", which link the line to its
// trace.
func JSONHandler(w io.Writer, level slog.Leveler, project string) slog.Handler {
	return traceHandler{Handler: slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: cloudLoggingAttr}), project: project}
}

func cloudLoggingAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		return slog.String("severity", severity(a.Value.Any()))
	case slog.MessageKey:
		a.Key = "message"
	}
	return a
}

func severity(v any) string {
	l, ok := v.(slog.Level)
	switch {
	case !ok:
		return "DEFAULT"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

// traceHandler adds the trace correlation fields of the record's span.
type traceHandler struct {
	slog.Handler
	project string
}

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		t := sc.TraceID().String()
		if h.project != "" {
			t = "projects/" + h.project + "/traces/" + t
		}
		r.AddAttrs(slog.String("logging.googleapis.com/trace", t),
			slog.String("logging.googleapis.com/spanId", sc.SpanID().String()),
			slog.Bool("logging.googleapis.com/trace_sampled", sc.IsSampled()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{Handler: h.Handler.WithAttrs(as), project: h.project}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{Handler: h.Handler.WithGroup(name), project: h.project}
}

// LogProject is the Google Cloud project the trace field names:
// GOOGLE_CLOUD_PROJECT, else PUBSUB_PROJECT_ID (the daemons' project).
func LogProject() string {
	if p := os.Getenv("GOOGLE_CLOUD_PROJECT"); p != "" {
		return p
	}
	return os.Getenv("PUBSUB_PROJECT_ID")
}
