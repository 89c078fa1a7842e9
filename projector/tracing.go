package projector

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/projection"
)

// Span attributes of eventrelay's own (the messaging.* ones follow the
// OpenTelemetry messaging conventions). The publisher's producer span
// carries eventrelay.event_id too, so both ends of a hop can be found by
// event id.
const (
	spanAttrEventID       = attribute.Key("eventrelay.event_id")
	spanAttrEventType     = attribute.Key("eventrelay.event_type")
	spanAttrAggregateType = attribute.Key("eventrelay.aggregate_type")
	spanAttrAggregateID   = attribute.Key("eventrelay.aggregate_id")
	spanAttrVersion       = attribute.Key("eventrelay.version")
	spanAttrProjection    = attribute.Key("eventrelay.projection")
	spanAttrOutcome       = attribute.Key("eventrelay.outcome")
)

// tracing names the spans of one engine (built once: no per-message
// string work).
type tracing struct {
	tracer  trace.Tracer
	name    string
	process string // "process <projection>"
	apply   string // "apply <projection>"
	// consumer is the process span's kind.
	consumer trace.SpanStartOption
}

func newTracing(t trace.Tracer, projection string) tracing {
	return tracing{tracer: t, name: projection, process: "process " + projection, apply: "apply " + projection,
		consumer: trace.WithSpanKind(trace.SpanKindConsumer)}
}

// startProcess starts the consumer span of one delivery, dated from its
// arrival (received), as a child of the producer's context in the
// message's traceparent (the publisher's "publish <topic>" span).
func (t tracing) startProcess(ctx context.Context, m *message, received time.Time) (context.Context, trace.Span) {
	if _, ok := m.Attributes[contract.AttrTraceparent]; ok {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(m.Attributes))
	}
	ctx, span := t.tracer.Start(ctx, t.process, t.consumer, trace.WithTimestamp(received))
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemGCPPubSub,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingMessageID(m.ID),
			spanAttrProjection.String(t.name),
		}
		if m.Subscription != "" {
			attrs = append(attrs, semconv.MessagingDestinationSubscriptionName(m.Subscription))
		}
		if m.OrderingKey != "" {
			attrs = append(attrs, semconv.MessagingGCPPubSubMessageOrderingKey(m.OrderingKey))
		}
		if m.DeliveryAttempt > 0 {
			attrs = append(attrs, semconv.MessagingGCPPubSubMessageDeliveryAttempt(m.DeliveryAttempt))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// startApply starts, for every item of batch whose process span records,
// an "apply <projection>" span under it: the applier's work on the batch
// (inbox rows and read model change in one transaction, or the bulk
// request of a search index), seen from each message's trace.
func (t tracing) startApply(batch []*item) {
	for _, it := range batch {
		if !it.span.IsRecording() {
			continue
		}
		_, it.applySpan = t.tracer.Start(trace.ContextWithSpan(context.Background(), it.span), t.apply,
			trace.WithAttributes(spanAttrProjection.String(t.name), semconv.MessagingBatchMessageCount(len(batch))))
	}
}

// endApply ends the apply spans with each item's result or error.
func endApply(batch []*item, classify func(error) (projection.Reason, bool)) {
	for _, it := range batch {
		s := it.applySpan
		if s == nil {
			continue
		}
		it.applySpan = nil
		if it.err != nil {
			reason, _ := classify(it.err)
			s.RecordError(it.err)
			s.SetStatus(codes.Error, string(reason))
			s.SetAttributes(semconv.ErrorTypeKey.String(string(reason)))
		} else {
			s.SetAttributes(spanAttrOutcome.String(it.result.String()))
		}
		s.End()
	}
}

// annotate puts the event's identity on the process span.
func annotate(span trace.Span, ev *projection.Event) {
	if span.IsRecording() {
		identify(span, ev)
	}
}

func identify(span trace.Span, ev *projection.Event) {
	span.SetAttributes(spanAttrEventID.String(ev.ID.String()), spanAttrEventType.String(ev.Type),
		spanAttrAggregateType.String(ev.AggregateType), spanAttrAggregateID.String(ev.AggregateID),
		spanAttrVersion.Int64(ev.AggregateVersion))
}

// settled records how a delivery ended on its process span: outcome
// applied, stale, duplicate, retry or dead_lettered; a failure as the
// span's error with its reason; a dead letter also as the event
// "dead-lettered" (or "dead-letter publish failed" with that error).
func settled(span trace.Span, outcome string, reason projection.Reason, cause, deadLetterErr error) {
	if span.IsRecording() {
		recordSettled(span, outcome, reason, cause, deadLetterErr)
	}
}

func recordSettled(span trace.Span, outcome string, reason projection.Reason, cause, deadLetterErr error) {
	span.SetAttributes(spanAttrOutcome.String(outcome))
	if cause == nil {
		return
	}
	span.RecordError(cause)
	span.SetStatus(codes.Error, string(reason))
	span.SetAttributes(semconv.ErrorTypeKey.String(string(reason)))
	switch {
	case outcome == outcomeDeadLettered:
		span.AddEvent("dead-lettered", trace.WithAttributes(attribute.String("error_reason", string(reason))))
	case deadLetterErr != nil:
		span.AddEvent("dead-letter publish failed", trace.WithAttributes(
			attribute.String("error_reason", string(reason)), attribute.String("exception.message", deadLetterErr.Error())))
	}
}

// Outcomes of a delivery that did not succeed (successes use result's
// names).
const (
	outcomeRetry        = "retry"
	outcomeDeadLettered = "dead_lettered"
)
