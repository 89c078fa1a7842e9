package service_test

import (
	"context"
	"testing"

	"github.com/go-kratos/kratos/v2/errors"

	"github.com/eventrelay/eventrelay/relaytest"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
)

// TestEveryWriteAppendsItsEventInTheSameTransaction: place, pay and cancel
// each change the order (version + 1) and leave exactly one outbox row
// whose envelope carries the new state.
func TestEveryWriteAppendsItsEventInTheSameTransaction(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	svc := ordertest.NewService(t, db.Pool)
	ctx := context.Background()

	placed, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c-1", AmountCents: 4200, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	id := placed.GetOrder().GetId()
	paid, err := svc.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: id, PaymentRef: "psp-77"})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := svc.CancelOrder(ctx, &ordersv1.CancelOrderRequest{Id: id, Reason: "changed mind"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetOrder().GetVersion() != 3 || got.GetOrder().GetStatus() != ordersv1.OrderStatus_ORDER_STATUS_CANCELLED {
		t.Fatalf("stored order %v, want cancelled at version 3", got.GetOrder())
	}

	rows := relaytest.Rows(t, db.Pool)
	want := []struct {
		eventID, typ string
		status       ordersv1.OrderStatus
	}{
		{placed.GetEventId(), "orders.order.placed", ordersv1.OrderStatus_ORDER_STATUS_PLACED},
		{paid.GetEventId(), "orders.order.paid", ordersv1.OrderStatus_ORDER_STATUS_PAID},
		{cancelled.GetEventId(), "orders.order.cancelled", ordersv1.OrderStatus_ORDER_STATUS_CANCELLED},
	}
	if len(rows) != len(want) {
		t.Fatalf("%d outbox rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.EventID.String() != w.eventID || r.EventType != w.typ || r.AggregateID != id || r.AggregateVersion != int64(i+1) || r.Topic != events.Codec.Topic() {
			t.Errorf("outbox row %d: %+v, want event %s %s v%d on %s", i, r, w.eventID, w.typ, i+1, events.Codec.Topic())
		}
		env, err := events.Codec.Decode(r.Payload)
		if err != nil {
			t.Fatalf("outbox row %d: %v", i, err)
		}
		if o := env.Payload.(interface{ GetOrder() *ordersv1.Order }).GetOrder(); o.GetStatus() != w.status || o.GetVersion() != int64(i+1) || o.GetAmountCents() != 4200 {
			t.Errorf("outbox row %d carries %v, want status %v at v%d", i, o, w.status, i+1)
		}
	}
}

// TestARefusedChangeWritesNothing: paying a cancelled order is a 409 and
// leaves neither a changed row nor an event.
func TestARefusedChangeWritesNothing(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	svc := ordertest.NewService(t, db.Pool)
	ctx := context.Background()
	placed, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c-2", AmountCents: 1, Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	id := placed.GetOrder().GetId()
	if _, err := svc.CancelOrder(ctx, &ordersv1.CancelOrderRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	_, err = svc.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: id, PaymentRef: "late"})
	if se := errors.FromError(err); se.GetCode() != 409 || se.GetReason() != biz.ReasonStateConflict {
		t.Fatalf("paying a cancelled order: %v, want 409 %s", err, biz.ReasonStateConflict)
	}
	if n := len(relaytest.Rows(t, db.Pool)); n != 2 {
		t.Errorf("%d outbox rows after the refused payment, want 2", n)
	}
	got, err := svc.GetOrder(ctx, &ordersv1.GetOrderRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetOrder().GetVersion() != 2 || got.GetOrder().GetStatus() != ordersv1.OrderStatus_ORDER_STATUS_CANCELLED {
		t.Errorf("order after the refused payment: %v", got.GetOrder())
	}
}

func TestBadRequestsNameTheirField(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	svc := ordertest.NewService(t, db.Pool)
	ctx := context.Background()
	for field, call := range map[string]func() error{
		"currency": func() error {
			_, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c", AmountCents: 1, Currency: "eur"})
			return err
		},
		"amount_cents": func() error {
			_, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c", AmountCents: 0, Currency: "EUR"})
			return err
		},
		"customer_id": func() error {
			_, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "nul\x00", AmountCents: 1, Currency: "EUR"})
			return err
		},
		"id": func() error {
			_, err := svc.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: "42", PaymentRef: "p"})
			return err
		},
	} {
		se := errors.FromError(call())
		if se.GetCode() != 400 || se.GetMetadata()["field"] != field {
			t.Errorf("%s: %v, want 400 naming the field", field, se)
		}
	}
	if n := len(relaytest.Rows(t, db.Pool)); n != 0 {
		t.Errorf("%d outbox rows after refused requests, want 0", n)
	}
}
