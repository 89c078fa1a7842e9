package events

import (
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/consistency"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

// Status names in the orders table, by proto enum.
var statusNames = map[ordersv1.OrderStatus]string{
	ordersv1.OrderStatus_ORDER_STATUS_PLACED:    "placed",
	ordersv1.OrderStatus_ORDER_STATUS_PAID:      "paid",
	ordersv1.OrderStatus_ORDER_STATUS_CANCELLED: "cancelled",
}

// StatusName is the table's name of s, or an error for an unspecified or
// unknown status.
func StatusName(s ordersv1.OrderStatus) (string, error) {
	if n, ok := statusNames[s]; ok {
		return n, nil
	}
	return "", fmt.Errorf("order status %v is not a stored status", s)
}

// StatusOf is the proto enum of a table status name.
func StatusOf(name string) (ordersv1.OrderStatus, error) {
	for s, n := range statusNames {
		if n == name {
			return s, nil
		}
	}
	return 0, fmt.Errorf("unknown order status %q", name)
}

// OrderFromRow converts a stored order to its API and event form.
func OrderFromRow(r ordersdb.Order) (*ordersv1.Order, error) {
	s, err := StatusOf(r.Status)
	if err != nil {
		return nil, fmt.Errorf("order %s: %w", r.ID, err)
	}
	return &ordersv1.Order{
		Id:          r.ID.String(),
		CustomerId:  r.CustomerID,
		AmountCents: r.AmountCents,
		Currency:    r.Currency,
		Status:      s,
		Version:     r.Version,
		PlacedAt:    timestamppb.New(r.PlacedAt),
		UpdatedAt:   timestamppb.New(r.UpdatedAt),
	}, nil
}

// SummaryFromOrder is the read-model row an event's order state projects
// to (without the event id and projection time).
func SummaryFromOrder(o *ordersv1.Order) (ordersdb.UpsertOrderSummaryParams, error) {
	id, err := uuid.Parse(o.GetId())
	if err != nil {
		return ordersdb.UpsertOrderSummaryParams{}, fmt.Errorf("order id %q: %w", o.GetId(), err)
	}
	status, err := StatusName(o.GetStatus())
	if err != nil {
		return ordersdb.UpsertOrderSummaryParams{}, fmt.Errorf("order %s: %w", id, err)
	}
	if o.GetPlacedAt() == nil || o.GetUpdatedAt() == nil {
		return ordersdb.UpsertOrderSummaryParams{}, fmt.Errorf("order %s: placed_at and updated_at are required", id)
	}
	return ordersdb.UpsertOrderSummaryParams{
		OrderID:         id,
		CustomerID:      o.GetCustomerId(),
		AmountCents:     o.GetAmountCents(),
		Currency:        o.GetCurrency(),
		Status:          status,
		Version:         o.GetVersion(),
		PlacedAt:        o.GetPlacedAt().AsTime(),
		SourceUpdatedAt: o.GetUpdatedAt().AsTime(),
	}, nil
}

// TokenOf is the consistency token of a write that left o at its version.
func TokenOf(o *ordersv1.Order) consistency.Token {
	return consistency.Token{AggregateType: Codec.AggregateType(), AggregateID: o.GetId(), AggregateVersion: o.GetVersion()}
}
