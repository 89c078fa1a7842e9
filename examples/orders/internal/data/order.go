package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

type orderRepo struct {
	data *Data
}

// NewOrderRepo returns the Postgres biz.OrderRepo.
func NewOrderRepo(d *Data) biz.OrderRepo { return &orderRepo{data: d} }

func (r *orderRepo) Place(ctx context.Context, customerID string, amountCents int64, currency string) (*biz.Change, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("generating order id: %w", err)
	}
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		stored, err := ordersdb.New(tx).InsertOrder(ctx, ordersdb.InsertOrderParams{
			ID: id, CustomerID: customerID, AmountCents: amountCents, Currency: currency,
		})
		if err != nil {
			return nil, fmt.Errorf("inserting order %s: %w", id, err)
		}
		return r.record(ctx, tx, stored, func(o *ordersv1.Order) proto.Message {
			return &ordersv1.OrderPlaced{Order: o}
		})
	})
}

func (r *orderRepo) Pay(ctx context.Context, id uuid.UUID, paymentRef string, check biz.Check) (*biz.Change, error) {
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		q := ordersdb.New(tx)
		if err := lockAndCheck(ctx, q, id, check); err != nil {
			return nil, err
		}
		stored, err := q.PayOrder(ctx, ordersdb.PayOrderParams{ID: id, PaymentRef: paymentRef})
		if err != nil {
			return nil, fmt.Errorf("paying order %s: %w", id, err)
		}
		return r.record(ctx, tx, stored, func(o *ordersv1.Order) proto.Message {
			return &ordersv1.OrderPaid{Order: o, PaymentRef: paymentRef}
		})
	})
}

func (r *orderRepo) Cancel(ctx context.Context, id uuid.UUID, reason string, check biz.Check) (*biz.Change, error) {
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		q := ordersdb.New(tx)
		if err := lockAndCheck(ctx, q, id, check); err != nil {
			return nil, err
		}
		stored, err := q.CancelOrder(ctx, ordersdb.CancelOrderParams{ID: id, CancelReason: reason})
		if err != nil {
			return nil, fmt.Errorf("cancelling order %s: %w", id, err)
		}
		return r.record(ctx, tx, stored, func(o *ordersv1.Order) proto.Message {
			return &ordersv1.OrderCancelled{Order: o, Reason: reason}
		})
	})
}

func (r *orderRepo) Get(ctx context.Context, id uuid.UUID) (*ordersv1.Order, error) {
	row, err := ordersdb.New(r.data.pool).GetOrder(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, biz.OrderNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading order %s: %w", id, err)
	}
	return events.OrderFromRow(row)
}

func (r *orderRepo) CustomerSummary(ctx context.Context, customerID string) (*ordersv1.CustomerSummary, error) {
	row, err := ordersdb.New(r.data.pool).CustomerSummary(ctx, customerID)
	if err != nil {
		return nil, fmt.Errorf("reading the summary of customer %q: %w", customerID, err)
	}
	return &ordersv1.CustomerSummary{
		CustomerId: customerID,
		Orders:     row.Orders,
		Placed:     row.Placed,
		Paid:       row.Paid,
		Cancelled:  row.Cancelled,
		PaidCents:  row.PaidCents,
	}, nil
}

// lockAndCheck takes the order's row lock (serializing its writers, so
// versions stay contiguous) and runs check on its current state.
func lockAndCheck(ctx context.Context, q *ordersdb.Queries, id uuid.UUID, check biz.Check) error {
	row, err := q.LockOrder(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return biz.OrderNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("locking order %s: %w", id, err)
	}
	cur, err := events.OrderFromRow(row)
	if err != nil {
		return err
	}
	return check(cur)
}

// record appends the event of the stored row in tx, through the public
// outbox writer. The event's occurred_at is the row's updated_at.
func (r *orderRepo) record(ctx context.Context, tx pgx.Tx, stored ordersdb.Order, payload func(*ordersv1.Order) proto.Message) (*biz.Change, error) {
	o, err := events.OrderFromRow(stored)
	if err != nil {
		return nil, err
	}
	ev, err := events.Codec.Event(o.GetId(), stored.Version, payload(o), stored.UpdatedAt)
	if err != nil {
		return nil, err
	}
	written, err := r.data.writer.InsertTx(ctx, tx, ev)
	if err != nil {
		return nil, fmt.Errorf("appending %s: %w", ev.EventType, err)
	}
	return &biz.Change{Order: o, EventID: written[0].EventID}, nil
}

// write runs fn in one transaction.
func (r *orderRepo) write(ctx context.Context, fn func(pgx.Tx) (*biz.Change, error)) (*biz.Change, error) {
	var ch *biz.Change
	err := r.data.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ch, err = fn(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ch, nil
}
