package events

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/outbox"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
)

// Names of the orders service's events.
const (
	AggregateType = "orders.order"
	Topic         = "orders.order.events"

	TypeOrderPlaced    = "orders.order.placed"
	TypeOrderPaid      = "orders.order.paid"
	TypeOrderCancelled = "orders.order.cancelled"

	// SchemaVersion is the payload schema version this code writes and reads.
	SchemaVersion = 1

	// MessageType is the envelope's full protobuf name, for
	// `relayctl dlq show --message-type`.
	MessageType = "orders.v1.OrderEvent"
)

// Types lists every event type, in life-cycle order.
var Types = []string{TypeOrderPlaced, TypeOrderPaid, TypeOrderCancelled}

// ErrMalformed is wrapped by Decode for bodies that are not a valid envelope.
var ErrMalformed = errors.New("malformed order event")

// TypeOf returns the event type of a payload message.
func TypeOf(payload proto.Message) (string, error) {
	switch payload.(type) {
	case *ordersv1.OrderPlaced:
		return TypeOrderPlaced, nil
	case *ordersv1.OrderPaid:
		return TypeOrderPaid, nil
	case *ordersv1.OrderCancelled:
		return TypeOrderCancelled, nil
	default:
		return "", fmt.Errorf("%T is not an order event payload", payload)
	}
}

// Encode builds the OrderEvent envelope of one outbox row from the
// metadata the writer filled. It is the orders service's outbox.Encoder.
func Encode(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
	want, err := TypeOf(payload)
	if err != nil {
		return nil, err
	}
	if meta.EventType != want {
		return nil, fmt.Errorf("event type %q does not match payload %T (%s)", meta.EventType, payload, want)
	}
	ev := &ordersv1.OrderEvent{
		EventId:          meta.EventID.String(),
		EventType:        meta.EventType,
		AggregateType:    meta.AggregateType,
		AggregateId:      meta.AggregateID,
		AggregateVersion: meta.AggregateVersion,
		SchemaVersion:    meta.SchemaVersion,
		OccurredAt:       timestamppb.New(meta.OccurredAt),
		Producer: &ordersv1.Producer{
			Service:  meta.Producer.Service,
			Instance: meta.Producer.Instance,
			Version:  meta.Producer.Version,
		},
		Traceparent: meta.Headers["traceparent"],
		Tracestate:  meta.Headers["tracestate"],
	}
	switch p := payload.(type) {
	case *ordersv1.OrderPlaced:
		ev.Payload = &ordersv1.OrderEvent_OrderPlaced{OrderPlaced: p}
	case *ordersv1.OrderPaid:
		ev.Payload = &ordersv1.OrderEvent_OrderPaid{OrderPaid: p}
	case *ordersv1.OrderCancelled:
		ev.Payload = &ordersv1.OrderEvent_OrderCancelled{OrderCancelled: p}
	}
	return proto.Marshal(ev)
}

// Decode parses and checks an envelope: it must unmarshal, carry an id, an
// aggregate, a positive version and a payload whose case matches
// event_type and whose order is the aggregate at that version. Errors wrap
// ErrMalformed.
func Decode(body []byte) (*ordersv1.OrderEvent, error) {
	ev := &ordersv1.OrderEvent{}
	if err := proto.Unmarshal(body, ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if ev.GetEventId() == "" || ev.GetAggregateId() == "" || ev.GetAggregateVersion() < 1 {
		return nil, fmt.Errorf("%w: missing event_id, aggregate_id or aggregate_version", ErrMalformed)
	}
	var want string
	switch ev.GetPayload().(type) {
	case *ordersv1.OrderEvent_OrderPlaced:
		want = TypeOrderPlaced
	case *ordersv1.OrderEvent_OrderPaid:
		want = TypeOrderPaid
	case *ordersv1.OrderEvent_OrderCancelled:
		want = TypeOrderCancelled
	default:
		return nil, fmt.Errorf("%w: no payload", ErrMalformed)
	}
	if ev.GetEventType() != want {
		return nil, fmt.Errorf("%w: event_type %q does not match payload (%s)", ErrMalformed, ev.GetEventType(), want)
	}
	o := OrderOf(ev)
	if o.GetId() != ev.GetAggregateId() || o.GetVersion() != ev.GetAggregateVersion() {
		return nil, fmt.Errorf("%w: payload order does not match aggregate %s v%d", ErrMalformed, ev.GetAggregateId(), ev.GetAggregateVersion())
	}
	return ev, nil
}

// OrderOf returns the state a decoded event carries (nil if none).
func OrderOf(ev *ordersv1.OrderEvent) *ordersv1.Order {
	switch p := ev.GetPayload().(type) {
	case *ordersv1.OrderEvent_OrderPlaced:
		return p.OrderPlaced.GetOrder()
	case *ordersv1.OrderEvent_OrderPaid:
		return p.OrderPaid.GetOrder()
	case *ordersv1.OrderEvent_OrderCancelled:
		return p.OrderCancelled.GetOrder()
	}
	return nil
}
