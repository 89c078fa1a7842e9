package envelope

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	envelopev1 "github.com/eventrelay/eventrelay/api/eventrelay/envelope/v1"
	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

// MessageType is the envelope's full protobuf name, e.g. for
// `relayctl dlq show --message-type`.
const MessageType = "eventrelay.envelope.v1.Envelope"

// Declaration binds an event type name to its payload message, and to the
// aggregate type and topic of its events when it is declared in an
// Aggregate; make one with Type (or a group with Aggregate).
type Declaration struct {
	name     string
	versions []int32
	message  protoreflect.MessageType
	goType   reflect.Type
	// aggregate and topic are set on the types of an Aggregate.
	aggregate, topic string
	// group holds an Aggregate's types (then name and message are unset).
	group []Declaration
}

// Type declares the event type name whose payload is a P, e.g.
// Type[*ordersv1.OrderPaid]("orders.order.paid"). versions lists the
// payload schema versions the service writes and reads (default 1); the
// projector dead-letters other versions as schema_unsupported. A type
// declared outside an Aggregate is encoded and decoded, but Codec.Event
// cannot build its events: that is a codec that reads another service's
// events.
func Type[P proto.Message](name string, versions ...int32) Declaration {
	var zero P
	if len(versions) == 0 {
		versions = []int32{1}
	}
	return Declaration{name: name, versions: slices.Clone(versions), message: zero.ProtoReflect().Type(), goType: reflect.TypeFor[P]()}
}

// Aggregate declares types as the events of the aggregate type
// aggregateType (e.g. "orders.order"), written to the Pub/Sub topic topic
// (e.g. "orders.order.events"): Codec.Event fills an event's aggregate type
// and topic from its payload's declaration, Codec.Encode refuses an event
// of these types for another aggregate type, and Codec.AggregateType,
// Codec.Topic and Codec.Topics return them to the service.
//
//	var Codec = envelope.Must(envelope.Aggregate("orders.order", "orders.order.events",
//		envelope.Type[*ordersv1.OrderPlaced]("orders.order.placed"),
//		envelope.Type[*ordersv1.OrderPaid]("orders.order.paid"),
//	))
//
// New checks the declaration: a non-empty aggregate type without '|', a
// newline or a NUL byte (a consistency token carries it), a valid topic id,
// at least one type, no Aggregate inside another, and one topic per
// aggregate type.
func Aggregate(aggregateType, topic string, types ...Declaration) Declaration {
	group := make([]Declaration, len(types))
	for i, d := range types {
		if d.group == nil {
			d.aggregate, d.topic = aggregateType, topic
		}
		group[i] = d
	}
	return Declaration{aggregate: aggregateType, topic: topic, group: group}
}

// Codec encodes and decodes the envelopes of a fixed set of event types.
// It is safe for concurrent use.
type Codec struct {
	byName    map[string]Declaration
	byMessage map[protoreflect.FullName]Declaration
	byGo      map[reflect.Type]Declaration
	// topics routes each declared aggregate type to its topic.
	topics map[string]string
	// legacy, when set, reads the bodies that are not Envelopes.
	legacy *LegacyFormat
}

// New returns the codec of decls: event types (Type), alone or grouped by
// aggregate (Aggregate). It fails on an empty name, a name declared twice,
// a payload message declared for two names (the payload's type must
// identify its event type), and on an Aggregate that is not well formed:
// an empty or malformed aggregate type, an invalid topic id, no types, an
// Aggregate nested in another, or an aggregate type declared twice with
// different topics.
func New(decls ...Declaration) (*Codec, error) {
	c := &Codec{
		byName:    map[string]Declaration{},
		byMessage: map[protoreflect.FullName]Declaration{},
		byGo:      map[reflect.Type]Declaration{},
		topics:    map[string]string{},
	}
	if len(decls) == 0 {
		return nil, errors.New("envelope: no event types declared")
	}
	for _, d := range decls {
		add := c.add
		if d.group != nil {
			add = c.addAggregate
		}
		if err := add(d); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addAggregate checks the Aggregate d and adds its types.
func (c *Codec) addAggregate(d Declaration) error {
	if err := checkAggregateType(d.aggregate); err != nil {
		return err
	}
	if err := contract.CheckTopicID(d.topic); err != nil {
		return fmt.Errorf("envelope: aggregate %s: %w", d.aggregate, err)
	}
	if len(d.group) == 0 {
		return fmt.Errorf("envelope: aggregate %s declares no event types", d.aggregate)
	}
	if t, dup := c.topics[d.aggregate]; dup && t != d.topic {
		return fmt.Errorf("envelope: aggregate %s declared with two topics, %s and %s", d.aggregate, t, d.topic)
	}
	c.topics[d.aggregate] = d.topic
	for _, t := range d.group {
		if t.group != nil {
			return fmt.Errorf("envelope: aggregate %s holds aggregate %s: declare each aggregate in New", d.aggregate, t.aggregate)
		}
		if err := c.add(t); err != nil {
			return err
		}
	}
	return nil
}

// add adds the event type d.
func (c *Codec) add(d Declaration) error {
	if d.name == "" || d.message == nil {
		return errors.New("envelope: a declaration has no name (use envelope.Type)")
	}
	if _, dup := c.byName[d.name]; dup {
		return fmt.Errorf("envelope: event type %s declared twice", d.name)
	}
	full := d.message.Descriptor().FullName()
	if o, dup := c.byMessage[full]; dup {
		return fmt.Errorf("envelope: message %s declared for both %s and %s", full, o.name, d.name)
	}
	c.byName[d.name], c.byMessage[full], c.byGo[d.goType] = d, d, d
	return nil
}

// checkAggregateType refuses an aggregate type that the outbox or a
// consistency token cannot carry.
func checkAggregateType(at string) error {
	switch {
	case strings.TrimSpace(at) == "":
		return fmt.Errorf("envelope: aggregate type %q is empty or white space", at)
	case strings.ContainsAny(at, "|\n\x00"):
		return fmt.Errorf("envelope: aggregate type %q contains '|', a newline or a NUL byte", at)
	}
	return nil
}

// Must is New that panics on an error, for package-level codecs.
func Must(decls ...Declaration) *Codec {
	c, err := New(decls...)
	if err != nil {
		panic(err)
	}
	return c
}

// Topics routes each aggregate type c declares (Aggregate) to its topic:
// a new map, empty for a codec without aggregates. It is what
// outbox.Config.Topics takes where a service routes events it builds by
// hand.
func (c *Codec) Topics() map[string]string { return maps.Clone(c.topics) }

// AggregateType is the aggregate type of a codec that declares one
// Aggregate, e.g. for its consistency tokens. It panics for a codec that
// declares none or several: use Topics.
func (c *Codec) AggregateType() string {
	at, _ := c.only("AggregateType")
	return at
}

// Topic is the topic of a codec that declares one Aggregate. It panics
// for a codec that declares none or several: use Topics.
func (c *Codec) Topic() string {
	_, t := c.only("Topic")
	return t
}

// only returns the aggregate type and topic of a codec that declares one
// aggregate, and panics naming method otherwise.
func (c *Codec) only(method string) (aggregateType, topic string) {
	if len(c.topics) != 1 {
		panic(fmt.Sprintf("envelope: Codec.%s of a codec that declares %d aggregates, want 1 (use Codec.Topics)", method, len(c.topics)))
	}
	for at, t := range c.topics {
		aggregateType, topic = at, t
	}
	return aggregateType, topic
}

// Types lists the declared event type names, sorted.
func (c *Codec) Types() []string {
	out := make([]string, 0, len(c.byName))
	for n := range c.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TypeOf returns the event type name declared for payload's message.
func (c *Codec) TypeOf(payload proto.Message) (string, error) {
	if payload == nil {
		return "", errors.New("envelope: nil payload")
	}
	d, ok := c.byMessage[payload.ProtoReflect().Descriptor().FullName()]
	if !ok {
		return "", fmt.Errorf("envelope: %T is not a declared event payload", payload)
	}
	return d.name, nil
}

// typeFor returns the event type name declared for the Go type of P.
func typeFor[P proto.Message](c *Codec) (Declaration, error) {
	d, ok := c.byGo[reflect.TypeFor[P]()]
	if !ok {
		return Declaration{}, fmt.Errorf("envelope: %v is not a declared event payload", reflect.TypeFor[P]())
	}
	return d, nil
}

// Encode is the outbox.Encoder: it wraps payload in an Envelope carrying
// meta. The payload's message must be the one declared for meta.EventType.
func (c *Codec) Encode(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
	want, err := c.TypeOf(payload)
	if err != nil {
		return nil, err
	}
	if meta.EventType != want {
		return nil, fmt.Errorf("envelope: event type %q does not match payload %T (declared for %s)", meta.EventType, payload, want)
	}
	if at := c.byName[want].aggregate; at != "" && meta.AggregateType != at {
		return nil, fmt.Errorf("envelope: event type %s is declared for aggregate type %s, not %q", want, at, meta.AggregateType)
	}
	anyp, err := anypb.New(payload)
	if err != nil {
		return nil, fmt.Errorf("envelope: packing %T: %w", payload, err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(&envelopev1.Envelope{
		EventId:          meta.EventID.String(),
		EventType:        meta.EventType,
		AggregateType:    meta.AggregateType,
		AggregateId:      meta.AggregateID,
		AggregateVersion: meta.AggregateVersion,
		SchemaVersion:    meta.SchemaVersion,
		OccurredAt:       timestamppb.New(meta.OccurredAt),
		Producer: &envelopev1.Producer{
			Service:  meta.Producer.Service,
			Instance: meta.Producer.Instance,
			Version:  meta.Producer.Version,
		},
		Traceparent: meta.Headers["traceparent"],
		Tracestate:  meta.Headers["tracestate"],
		Payload:     anyp,
	})
}

// Unmarshal parses and checks a body: an Envelope with an event id, an
// aggregate id, a positive version and a payload of the message declared
// for its event type. It returns the envelope and the unpacked payload.
// Errors are projection.Permanent (event_type_unknown or payload_invalid).
func (c *Codec) Unmarshal(body []byte) (*envelopev1.Envelope, proto.Message, error) {
	env := &envelopev1.Envelope{}
	if err := proto.Unmarshal(body, env); err != nil {
		return nil, nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("envelope: %w", err))
	}
	if env.GetEventId() == "" || env.GetAggregateId() == "" || env.GetAggregateVersion() < 1 {
		return nil, nil, projection.Permanent(projection.PayloadInvalid, errors.New("envelope: missing event_id, aggregate_id or aggregate_version"))
	}
	d, ok := c.byName[env.GetEventType()]
	if !ok {
		return nil, nil, projection.Permanent(projection.EventTypeUnknown, fmt.Errorf("envelope: event type %q is not declared", env.GetEventType()))
	}
	if env.GetPayload() == nil {
		return nil, nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("envelope: %s has no payload", env.GetEventType()))
	}
	if got := env.GetPayload().MessageName(); got != d.message.Descriptor().FullName() {
		return nil, nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("envelope: %s carries %s, want %s", env.GetEventType(), got, d.message.Descriptor().FullName()))
	}
	p := d.message.New().Interface()
	if err := env.GetPayload().UnmarshalTo(p); err != nil {
		return nil, nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("envelope: %s payload: %w", env.GetEventType(), err))
	}
	return env, p, nil
}

// Decode is the projection.Decoder: the envelope's identity and the typed
// payload (e.g. a *ordersv1.OrderPaid) as Envelope.Payload. A codec
// WithLegacy reads a body that is not an Envelope in the legacy format.
func (c *Codec) Decode(body []byte) (projection.Envelope, error) {
	env, p, err := c.Unmarshal(body)
	if err != nil {
		if c.legacy != nil && !isEnvelope(body) {
			_, out, lerr := c.readLegacy(body, err)
			return out, lerr
		}
		return projection.Envelope{}, err
	}
	out := projection.Envelope{
		EventID:          env.GetEventId(),
		Type:             env.GetEventType(),
		AggregateType:    env.GetAggregateType(),
		AggregateID:      env.GetAggregateId(),
		AggregateVersion: env.GetAggregateVersion(),
		SchemaVersion:    env.GetSchemaVersion(),
		Payload:          p,
	}
	if env.GetOccurredAt() != nil {
		out.OccurredAt = env.GetOccurredAt().AsTime()
	}
	return out, nil
}

// EventType is the projection.EventType of a declared name (its schema
// versions and Decode), for Registry.Register.
func (c *Codec) EventType(name string) (projection.EventType, error) {
	d, ok := c.byName[name]
	if !ok {
		return projection.EventType{}, fmt.Errorf("envelope: event type %q is not declared", name)
	}
	return projection.EventType{Name: name, SchemaVersions: slices.Clone(d.versions), Decode: c.Decode}, nil
}

// DecodeEnvelope returns the checked Envelope of body (its payload still an
// Any, which protojson prints with the payload's fields): with
// hook.DecoderFunc it is the Decoder of `relayctl dlq show`. A codec
// WithLegacy returns the legacy message of a body in the legacy format.
func (c *Codec) DecodeEnvelope(body []byte, _ map[string]string) (proto.Message, error) {
	env, _, err := c.Unmarshal(body)
	if err != nil {
		if c.legacy != nil && !isEnvelope(body) {
			m, _, lerr := c.readLegacy(body, err)
			return m, lerr
		}
		return nil, err
	}
	return env, nil
}
