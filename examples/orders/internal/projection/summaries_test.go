package projection_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// event builds the projection.Event the projector would hand over for the
// order at o.Version, resolved through the registry like the engine does.
func event(t *testing.T, reg *projection.Registry[projection.TxHandler], typ string, o *ordersv1.Order) (*projection.Event, projection.TxHandler) {
	t.Helper()
	m := outbox.Metadata{
		EventID: uuid.Must(uuid.NewV7()), EventType: typ, AggregateType: events.Codec.AggregateType(), AggregateID: o.GetId(),
		AggregateVersion: o.GetVersion(), SchemaVersion: 1, OccurredAt: time.Now().UTC(),
	}
	payload := map[string]proto.Message{
		"orders.order.placed":    &ordersv1.OrderPlaced{Order: o},
		"orders.order.paid":      &ordersv1.OrderPaid{Order: o},
		"orders.order.cancelled": &ordersv1.OrderCancelled{Order: o},
	}[typ]
	body, err := events.Codec.Encode(m, payload)
	if err != nil {
		t.Fatal(err)
	}
	ev := &projection.Event{ID: m.EventID, Type: typ, AggregateType: m.AggregateType, AggregateID: o.GetId(), AggregateVersion: o.GetVersion(), SchemaVersion: 1, Body: body}
	rt, err := reg.Resolve(ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev, rt.Handler
}

func apply(t *testing.T, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, h projection.TxHandler, ev *projection.Event) projection.Outcome {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit: no-op
	out, err := h.HandleTx(ctx, tx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSummariesApplyIfNewer: each newer version is applied; an older or
// equal version is Stale and changes nothing (state-carrying events make
// redelivery and reordering harmless).
func TestSummariesApplyIfNewer(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	reg := orderproj.Summaries.Tx
	now := timestamppb.Now()
	o := &ordersv1.Order{Id: uuid.NewString(), CustomerId: "c-9", AmountCents: 990, Currency: "EUR",
		Status: ordersv1.OrderStatus_ORDER_STATUS_PLACED, Version: 1, PlacedAt: now, UpdatedAt: now}
	placed, placedH := event(t, reg, "orders.order.placed", o)
	paidOrder := &ordersv1.Order{Id: o.Id, CustomerId: o.CustomerId, AmountCents: o.AmountCents, Currency: o.Currency,
		Status: ordersv1.OrderStatus_ORDER_STATUS_PAID, Version: 2, PlacedAt: now, UpdatedAt: timestamppb.Now()}
	paid, h := event(t, reg, "orders.order.paid", paidOrder)

	if got := apply(t, db.Pool, h, paid); got != projection.Applied {
		t.Fatalf("v2 first: %v, want applied", got)
	}
	if got := apply(t, db.Pool, placedH, placed); got != projection.Stale {
		t.Fatalf("v1 after v2: %v, want stale", got)
	}
	if got := apply(t, db.Pool, h, paid); got != projection.Stale {
		t.Fatalf("v2 again: %v, want stale", got)
	}
	row, err := ordersdb.New(db.Pool).GetOrderSummary(context.Background(), uuid.MustParse(o.Id))
	if err != nil {
		t.Fatal(err)
	}
	if row.Version != 2 || row.Status != "paid" || row.LastEventID != paid.ID || row.AmountCents != 990 {
		t.Errorf("order_summaries row %+v, want paid v2 from event %s", row, paid.ID)
	}
	sum, err := ordersdb.New(db.Pool).CustomerSummary(context.Background(), "c-9")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Orders != 1 || sum.Paid != 1 || sum.PaidCents != 990 {
		t.Errorf("customer summary %+v, want 1 paid order of 990", sum)
	}
}

// TestRegistryClassifiesBadMessages: the registry refuses what the
// projector must dead-letter, with the reason it will carry.
func TestRegistryClassifiesBadMessages(t *testing.T) {
	reg := orderproj.Summaries.Tx
	id := uuid.New()
	for name, tc := range map[string]struct {
		ev   projection.Event
		want projection.Reason
	}{
		"garbage body":   {projection.Event{ID: id, Type: "orders.order.placed", AggregateID: "x", AggregateVersion: 1, SchemaVersion: 1, Body: []byte("garbage")}, projection.PayloadInvalid},
		"unknown type":   {projection.Event{ID: id, Type: "orders.order.shipped", AggregateID: "x", AggregateVersion: 1, SchemaVersion: 1}, projection.EventTypeUnknown},
		"schema version": {projection.Event{ID: id, Type: "orders.order.paid", AggregateID: "x", AggregateVersion: 1, SchemaVersion: 2}, projection.SchemaUnsupported},
	} {
		_, err := reg.Resolve(&tc.ev)
		reason, permanent := projection.Classify(err)
		if !permanent || reason != tc.want {
			t.Errorf("%s: %v classified %s (permanent %v), want permanent %s", name, err, reason, permanent, tc.want)
		}
	}
}
