package relay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/internal/telemetry/telemetrytest"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestPublishSpanContinuesTheRowsTrace: a row written inside a request span
// is published under a "publish <topic>" producer span that is a child of
// that request span, and the message's traceparent names the publish span,
// so the projector's consumer span (which extracts it) hangs under the
// publish in the same trace. Real Postgres, relay and pstest; spans in the
// SDK's in-memory recorder. Not parallel: it sets the global provider.
func TestPublishSpanContinuesTheRowsTrace(t *testing.T) {
	rec := telemetrytest.Global(t)

	db, ps, _, request := writeInRequestSpan(t)

	fx.StartRelay(t, db.Pool, fx.NewConfig("relay-trace", ps.Config))
	fx.WaitFor(t, time.Minute, "the row published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 1 })
	msgs := ps.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	var publish sdktrace.ReadOnlySpan
	fx.WaitFor(t, time.Minute, "the publish span ended", func() bool {
		for _, s := range rec.Ended() {
			if strings.HasPrefix(s.Name(), "publish ") {
				publish = s
				return true
			}
		}
		return false
	})
	reqSC := request.SpanContext()
	if publish.SpanContext().TraceID() != reqSC.TraceID() || publish.Parent().SpanID() != reqSC.SpanID() {
		t.Fatalf("publish span trace %s parent %s, want trace %s parent %s (the request span)",
			publish.SpanContext().TraceID(), publish.Parent().SpanID(), reqSC.TraceID(), reqSC.SpanID())
	}
	if publish.SpanKind() != trace.SpanKindProducer {
		t.Errorf("publish span kind %s, want producer", publish.SpanKind())
	}
	consumer := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier(msgs[0].Attributes))
	got := trace.SpanContextFromContext(consumer)
	if got.TraceID() != reqSC.TraceID() || got.SpanID() != publish.SpanContext().SpanID() {
		t.Fatalf("message traceparent %q: want trace %s and the publish span %s as parent",
			msgs[0].Attributes["traceparent"], reqSC.TraceID(), publish.SpanContext().SpanID())
	}
}

// TestNoopTracingKeepsTheRowsTraceparent: with the no-op provider (the
// daemon's when no span is exported) the relay makes no span, and the
// message carries the row's traceparent as written, so consumers still
// join the request's trace.
func TestNoopTracingKeepsTheRowsTraceparent(t *testing.T) {
	telemetrytest.Global(t) // the writer's request span is a real one

	db, ps, ctx, _ := writeInRequestSpan(t)
	want := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, want)

	cfg := fx.NewConfig("relay-notrace", ps.Config)
	cfg.TracerProvider = noop.NewTracerProvider()
	fx.StartRelay(t, db.Pool, cfg)
	fx.WaitFor(t, time.Minute, "the row published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 1 })
	msgs := ps.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	if got := msgs[0].Attributes["traceparent"]; got == "" || got != want["traceparent"] {
		t.Fatalf("message traceparent %q, want the row's %q", got, want["traceparent"])
	}
}

// writeInRequestSpan writes one row inside an ended server span, on a
// fresh schema and pstest topic, and returns them with the span's context.
func writeInRequestSpan(t *testing.T) (*relaytest.DB, *gpubsubtest.Server, context.Context, trace.Span) {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)

	ctx, request := otel.Tracer("test").Start(context.Background(), "POST /v1/items", trace.WithSpanKind(trace.SpanKindServer))
	w := fx.Writer(t, true)
	if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, fx.Item(fx.ID(1), 1, 0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	request.End()
	return db, ps, ctx, request
}
