package events_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

func meta(typ string, version int64, id string) outbox.Metadata {
	return outbox.Metadata{
		EventID:          uuid.Must(uuid.NewV7()),
		EventType:        typ,
		AggregateType:    events.AggregateType,
		AggregateID:      id,
		AggregateVersion: version,
		SchemaVersion:    events.SchemaVersion,
		OccurredAt:       time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC),
		Producer:         outbox.Producer{Service: "orders", Instance: "test"},
		Headers:          map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	id := uuid.NewString()
	o := &ordersv1.Order{Id: id, CustomerId: "c1", AmountCents: 1250, Currency: "EUR", Status: ordersv1.OrderStatus_ORDER_STATUS_PAID, Version: 2}
	m := meta(events.TypeOrderPaid, 2, id)
	body, err := events.Encode(m, &ordersv1.OrderPaid{Order: o, PaymentRef: "pay-1"})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetEventId() != m.EventID.String() || ev.GetEventType() != events.TypeOrderPaid || ev.GetAggregateVersion() != 2 ||
		ev.GetProducer().GetService() != "orders" || ev.GetTraceparent() != m.Headers["traceparent"] ||
		!ev.GetOccurredAt().AsTime().Equal(m.OccurredAt) {
		t.Errorf("decoded envelope %v does not carry the metadata %+v", ev, m)
	}
	if got := events.OrderOf(ev); !proto.Equal(got, o) || ev.GetOrderPaid().GetPaymentRef() != "pay-1" {
		t.Errorf("decoded order %v, want %v", got, o)
	}
}

func TestEncodeRefusesAMismatchedType(t *testing.T) {
	id := uuid.NewString()
	_, err := events.Encode(meta(events.TypeOrderPlaced, 1, id), &ordersv1.OrderCancelled{Order: &ordersv1.Order{Id: id, Version: 1}})
	if err == nil {
		t.Fatal("Encode accepted an OrderCancelled payload for event type orders.order.placed")
	}
}

func TestDecodeRefusesMalformedEnvelopes(t *testing.T) {
	id := uuid.NewString()
	good := &ordersv1.OrderEvent{
		EventId: uuid.NewString(), EventType: events.TypeOrderPlaced, AggregateType: events.AggregateType,
		AggregateId: id, AggregateVersion: 1, SchemaVersion: 1,
		Payload: &ordersv1.OrderEvent_OrderPlaced{OrderPlaced: &ordersv1.OrderPlaced{Order: &ordersv1.Order{Id: id, Version: 1}}},
	}
	if _, err := events.Decode(marshal(t, good)); err != nil {
		t.Fatalf("the well-formed envelope: %v", err)
	}
	cases := map[string][]byte{
		"not protobuf":     []byte("\xff\xff\xff not an envelope"),
		"no payload":       marshal(t, edit(good, func(e *ordersv1.OrderEvent) { e.Payload = nil })),
		"type mismatch":    marshal(t, edit(good, func(e *ordersv1.OrderEvent) { e.EventType = events.TypeOrderPaid })),
		"version mismatch": marshal(t, edit(good, func(e *ordersv1.OrderEvent) { e.AggregateVersion = 2 })),
		"other aggregate":  marshal(t, edit(good, func(e *ordersv1.OrderEvent) { e.AggregateId = uuid.NewString() })),
		"no event id":      marshal(t, edit(good, func(e *ordersv1.OrderEvent) { e.EventId = "" })),
	}
	for name, body := range cases {
		if _, err := events.Decode(body); !errors.Is(err, events.ErrMalformed) {
			t.Errorf("%s: Decode error %v, want ErrMalformed", name, err)
		}
	}
}

func edit(e *ordersv1.OrderEvent, f func(*ordersv1.OrderEvent)) *ordersv1.OrderEvent {
	c := proto.Clone(e).(*ordersv1.OrderEvent)
	f(c)
	return c
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
