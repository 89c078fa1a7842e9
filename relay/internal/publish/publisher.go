package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// ErrAbandoned is returned by Result.Get when the caller stopped waiting
// before the result arrived: the outcome is unknown.
var ErrAbandoned = errors.New("stopped waiting for the publish result")

// Settings are what the publisher takes from the relay's options.
type Settings struct {
	// Topics routes aggregate types to topic ids, overriding the row's
	// topic.
	Topics map[string]string
	// MaxMessageBytes fails larger messages with message_too_large
	// without calling Pub/Sub.
	MaxMessageBytes int
	// ReadyTopic is probed by Ping (empty: the routed topics and those
	// published to).
	ReadyTopic string
	// Client are the client library's publish settings (bundling,
	// timeout, requests in flight).
	Client pubsub.PublishSettings
}

// Publisher publishes claimed rows to Pub/Sub: ordering key = the row's
// ordering_key, topic = the row's topic unless Settings.Topics routes its
// aggregate type elsewhere. One Publish request carries one ordering key,
// as Cloud Pub/Sub requires (gpubsub.Publishers). For one (topic,
// ordering key) messages reach Pub/Sub in the order of Publish calls;
// after a failure the key is paused until Resume.
type Publisher struct {
	client   *pubsub.Client
	pubs     *gpubsub.Publishers
	project  string
	routes   map[string]string
	maxBytes int
	probe    string
	topics   topicSet     // published to, for Ping
	tracer   trace.Tracer // nil: the no-op provider, no spans
}

// New returns a Publisher on client (publishing in client's project)
// whose producer spans come from tp (nil: the global provider); stop
// flushes and stops its publishers.
func New(client *pubsub.Client, cfg Settings, tp trace.TracerProvider) (p *Publisher, stop func()) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	s := &Publisher{
		client:   client,
		pubs:     gpubsub.NewPublishers(client, cfg.Client),
		project:  client.Project(),
		routes:   cfg.Topics,
		maxBytes: cfg.MaxMessageBytes,
		probe:    cfg.ReadyTopic,
	}
	if _, off := tp.(noop.TracerProvider); !off {
		// The no-op provider (tracing not exported) would hand back
		// non-recording spans, after the row's traceparent was parsed for
		// nothing: skipped, the message keeps the row's traceparent as it
		// would.
		s.tracer = tp.Tracer("github.com/eventrelay/eventrelay/relay")
	}
	return s, s.stop
}

// stopTimeout bounds the final flush: after an abandoned drain, messages
// may still be in flight for up to publish.timeout; their rows were
// released and will be published again.
const stopTimeout = 5 * time.Second

func (s *Publisher) stop() {
	done := make(chan struct{})
	go func() {
		s.pubs.Stop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(stopTimeout):
	}
}

// Topic is the topic e is published to: the row's, unless Settings.Topics
// routes its aggregate type elsewhere.
func (s *Publisher) Topic(e *claim.Event) string { return s.topic(e) }

func (s *Publisher) topic(e *claim.Event) string {
	if t := s.routes[e.AggregateType]; t != "" {
		return t
	}
	return e.Topic
}

// Message builds the Pub/Sub message of e: its attributes are the row's
// headers plus the message contract's (contract.AttrEventID, ...), which
// headers cannot override, so triage never needs to decode the body.
func Message(e *claim.Event) *pubsub.Message {
	attrs := contract.Identity{
		EventID: e.EventID, EventType: e.EventType, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
		AggregateVersion: e.AggregateVersion, SchemaVersion: e.SchemaVersion, OccurredAt: e.OccurredAt,
	}.MessageAttributes(e.Headers)
	return &pubsub.Message{Data: e.Payload, Attributes: attrs, OrderingKey: e.OrderingKey}
}

// Publish starts publishing e. Messages over Settings.MaxMessageBytes are
// refused with message_too_large, messages breaking another of Pub/Sub's
// limits (contract.CheckMessage: rows written before the writer checked them)
// with payload_invalid: a non-nil error means nothing was sent.
func (s *Publisher) Publish(ctx context.Context, e *claim.Event) (Result, error) {
	msg := Message(e)
	if n := gpubsub.MessageSize(msg); n > s.maxBytes {
		return Result{}, errclass.Newf(errclass.MessageTooLarge, "message is %d bytes, limit is %d (publish.max_message_bytes, Options.Publish.MaxMessageBytes)", n, s.maxBytes)
	}
	// contract.CheckMessage without its size check, done above.
	if err := contract.CheckOrderingKey(msg.OrderingKey); err != nil {
		return Result{}, errclass.New(errclass.PayloadInvalid, err)
	}
	if err := contract.CheckAttributes(msg.Attributes); err != nil {
		return Result{}, errclass.New(errclass.PayloadInvalid, err)
	}
	topic := s.topic(e)
	s.topics.add(topic)
	var span trace.Span
	if s.tracer != nil {
		span = startPublishSpan(s.tracer, msg, topic)
	}
	return Result{r: s.pubs.Publish(ctx, topic, msg), span: span}, nil
}

// startPublishSpan starts the producer span of msg as a child of the
// producing request's trace (the row's traceparent header) and puts the
// span's own context in the message attributes, so consumers continue the
// trace from the publish. It ends when the result is read.
func startPublishSpan(tracer trace.Tracer, msg *pubsub.Message, topic string) trace.Span {
	carrier := propagation.MapCarrier(msg.Attributes)
	ctx := context.Background()
	if _, ok := msg.Attributes["traceparent"]; ok {
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
	}
	ctx, span := tracer.Start(ctx, "publish "+topic, trace.WithSpanKind(trace.SpanKindProducer))
	if !span.IsRecording() {
		// No-op provider: the row's traceparent, if any, stays as it is.
		return span
	}
	span.SetAttributes(attribute.String("messaging.system", "gcp_pubsub"),
		attribute.String("messaging.operation.type", "send"),
		attribute.String("messaging.destination.name", topic),
		attribute.String("messaging.gcp_pubsub.message.ordering_key", msg.OrderingKey),
		attribute.String("eventrelay.event_id", msg.Attributes[contract.AttrEventID]))
	propagation.TraceContext{}.Inject(ctx, carrier)
	return span
}

// Flush sends what Publish has buffered for bundling now, instead of
// after the bundling delay, and returns at once. Results still arrive
// through each Result.
func (s *Publisher) Flush() { s.pubs.Flush() }

// Resume un-pauses e's ordering key after a failed publish.
func (s *Publisher) Resume(e *claim.Event) { s.pubs.ResumePublish(s.topic(e), e.OrderingKey) }

// Paused reports whether err failed a message without sending it because
// an earlier message of its ordering key failed: not the message's own
// fault, and the key stays paused until Resume.
func Paused(err error) bool {
	var paused pubsub.ErrPublishingPaused
	return errors.As(err, &paused)
}

// Result is the pending result of one publish.
type Result struct {
	r    *pubsub.PublishResult
	span trace.Span // nil: no span
}

// Get waits for the message id. Errors are classified (errclass);
// ErrAbandoned when ctx ended first.
func (r Result) Get(ctx context.Context) (string, error) {
	select {
	case <-r.r.Ready():
	case <-ctx.Done():
		select {
		case <-r.r.Ready():
		default:
			return "", fmt.Errorf("%w: %w", ErrAbandoned, ctx.Err())
		}
	}
	id, err := r.r.Get(context.Background())
	if r.span != nil {
		if err != nil {
			r.span.SetStatus(codes.Error, err.Error())
		} else {
			r.span.SetAttributes(attribute.String("gcp_pubsub.message.id", id))
		}
		r.span.End()
	}
	switch {
	case Paused(err):
		return "", errclass.New(errclass.Unknown, fmt.Errorf("ordering key paused by an earlier failure: %w", err))
	case errors.Is(err, pubsub.ErrPublisherStopped):
		return "", errclass.New(errclass.Unknown, err)
	case err != nil:
		return "", fmt.Errorf("publishing: %w", gpubsub.Classify(err))
	}
	return id, nil
}
