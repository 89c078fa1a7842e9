package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl/hook"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

// Rebuilder restates the orders table: one state-carrying event per order
// at its current version (OrderPlaced, OrderPaid or OrderCancelled by its
// status). Orders are never deleted, so there are no tombstones.
type Rebuilder struct{}

var _ hook.Rebuilder = Rebuilder{}

// Subject implements hook.Rebuilder.
func (Rebuilder) Subject() hook.Subject {
	return hook.Subject{Noun: "order", Source: "orders.orders", Tombstone: "none", Encoder: events.Codec.Encode}
}

// CheckID implements hook.Rebuilder: an order id is a UUID.
func (Rebuilder) CheckID(id string) error {
	_, err := orderIDs([]string{id})
	return err
}

// Count implements hook.Rebuilder.
func (Rebuilder) Count(ctx context.Context, tx pgx.Tx, ids []string) (hook.Count, error) {
	only, err := orderIDs(ids)
	if err != nil {
		return hook.Count{}, err
	}
	n, err := ordersdb.New(tx).CountOrders(ctx, only)
	if err != nil {
		return hook.Count{}, fmt.Errorf("counting orders: %w", err)
	}
	return hook.Count{Total: n}, nil
}

// Restate implements hook.Rebuilder; the page is read FOR SHARE, so each
// restatement carries the version its row has when the outbox row commits.
func (Rebuilder) Restate(ctx context.Context, tx pgx.Tx, after string, ids []string, limit int) ([]outbox.Event, error) {
	var from uuid.UUID
	if after != "" {
		u, err := uuid.Parse(after)
		if err != nil {
			return nil, fmt.Errorf("page cursor %q is not an order id: %w", after, err)
		}
		from = u
	}
	only, err := orderIDs(ids)
	if err != nil {
		return nil, err
	}
	rows, err := ordersdb.New(tx).ListOrdersForRestatement(ctx, ordersdb.ListOrdersForRestatementParams{
		AfterID: from, Ids: only, PageSize: int32(limit),
	})
	if err != nil {
		return nil, fmt.Errorf("reading orders after %q: %w", after, err)
	}
	out := make([]outbox.Event, 0, len(rows))
	for _, r := range rows {
		ev, err := restatement(r)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// restatement is the state-carrying event re-stating row at its version.
func restatement(r ordersdb.Order) (outbox.Event, error) {
	o, err := events.OrderFromRow(r)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("restating order %s: %w", r.ID, err)
	}
	var payload proto.Message
	switch o.GetStatus() {
	case ordersv1.OrderStatus_ORDER_STATUS_PAID:
		payload = &ordersv1.OrderPaid{Order: o, PaymentRef: r.PaymentRef}
	case ordersv1.OrderStatus_ORDER_STATUS_CANCELLED:
		payload = &ordersv1.OrderCancelled{Order: o, Reason: r.CancelReason}
	default:
		payload = &ordersv1.OrderPlaced{Order: o}
	}
	ev, err := events.Codec.Event(o.GetId(), r.Version, payload, time.Time{}) // occurred now
	ev.Restatement = true
	return ev, err
}

// orderIDs parses ids (never nil: the queries take an empty array as
// "all").
func orderIDs(ids []string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(ids))
	for _, s := range ids {
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, hook.Usagef("%q is not an order id (UUID)", s)
		}
		out = append(out, u)
	}
	return out, nil
}
