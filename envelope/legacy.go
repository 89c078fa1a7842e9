package envelope

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	envelopev1 "github.com/eventrelay/eventrelay/api/eventrelay/envelope/v1"
	"github.com/eventrelay/eventrelay/projection"
)

// LegacyFormat is the envelope a service wrote before it moved onto this
// codec; make one with Legacy and add it with Codec.WithLegacy.
type LegacyFormat struct {
	message protoreflect.MessageType
	read    func(proto.Message) (projection.Envelope, error)
}

// Legacy declares the service's former envelope message L and read, which
// returns a checked L's identity and its payload (the message the codec
// declares for the event type, e.g. the *ordersv1.OrderPaid inside the old
// envelope's oneof). read's errors are payload_invalid.
func Legacy[L proto.Message](read func(L) (projection.Envelope, error)) LegacyFormat {
	var zero L
	return LegacyFormat{
		message: zero.ProtoReflect().Type(),
		read:    func(m proto.Message) (projection.Envelope, error) { return read(m.(L)) },
	}
}

// WithLegacy returns a copy of c whose Decode and DecodeEnvelope also read
// bodies of the legacy format l: the bodies already in outboxes and
// subscriptions when a service switches its writers to Encode. A body is
// read as l only when it is not an Envelope (it does not parse as one or
// carries no payload); an Envelope is never given to l. A body that is
// neither is payload_invalid, its error naming both formats. Encode is
// unchanged: a codec never writes the legacy format.
func (c *Codec) WithLegacy(l LegacyFormat) *Codec {
	out := *c
	out.legacy = &l
	return &out
}

// isEnvelope reports whether body parses as an Envelope with a payload;
// bodies of another envelope message carry none (field 11 is the Any).
func isEnvelope(body []byte) bool {
	env := &envelopev1.Envelope{}
	return proto.Unmarshal(body, env) == nil && env.GetPayload() != nil
}

// readLegacy decodes body in the legacy format; notEnvelope is why body
// was not read as an Envelope. The result passes the codec's checks: a
// declared event type, a payload of its declared message.
func (c *Codec) readLegacy(body []byte, notEnvelope error) (proto.Message, projection.Envelope, error) {
	name := c.legacy.message.Descriptor().FullName()
	refuse := func(err error) error {
		return projection.Permanent(projection.PayloadInvalid,
			fmt.Errorf("envelope: body is neither an %s (%v) nor a legacy %s: %w", MessageType, notEnvelope, name, err))
	}
	m := c.legacy.message.New().Interface()
	if err := proto.Unmarshal(body, m); err != nil {
		return nil, projection.Envelope{}, refuse(err)
	}
	env, err := c.legacy.read(m)
	if err != nil {
		return nil, projection.Envelope{}, refuse(err)
	}
	if env.EventID == "" || env.AggregateID == "" || env.AggregateVersion < 1 || env.Payload == nil {
		return nil, projection.Envelope{}, refuse(errors.New("missing event id, aggregate id, version or payload"))
	}
	d, ok := c.byName[env.Type]
	if !ok {
		return nil, projection.Envelope{}, projection.Permanent(projection.EventTypeUnknown, fmt.Errorf("envelope: legacy %s: event type %q is not declared", name, env.Type))
	}
	p, ok := env.Payload.(proto.Message)
	if !ok || p.ProtoReflect().Descriptor().FullName() != d.message.Descriptor().FullName() {
		return nil, projection.Envelope{}, refuse(fmt.Errorf("%s carries %T, want %s", env.Type, env.Payload, d.message.Descriptor().FullName()))
	}
	return m, env, nil
}
