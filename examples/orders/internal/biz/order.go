package biz

import (
	"context"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
)

// Change is a committed write: the order after it and the event it appended.
type Change struct {
	Order   *ordersv1.Order
	EventID uuid.UUID
}

// Check inspects the locked current state of an order before a change; an
// error aborts the transaction.
type Check func(cur *ordersv1.Order) error

// OrderRepo stores orders. Every write method changes the orders row and
// appends exactly one outbox event in the same transaction.
type OrderRepo interface {
	Place(ctx context.Context, customerID string, amountCents int64, currency string) (*Change, error)
	Pay(ctx context.Context, id uuid.UUID, paymentRef string, check Check) (*Change, error)
	Cancel(ctx context.Context, id uuid.UUID, reason string, check Check) (*Change, error)
	Get(ctx context.Context, id uuid.UUID) (*ordersv1.Order, error)
	// CustomerSummary reads the projected read model.
	CustomerSummary(ctx context.Context, customerID string) (*ordersv1.CustomerSummary, error)
}

// OrderSearch finds orders in the search read model. fresh asks for the
// writes already awaited by consistency tokens to be visible.
type OrderSearch interface {
	Search(ctx context.Context, customerID string, status ordersv1.OrderStatus, fresh bool) ([]*ordersv1.Order, error)
}

// OrderUsecase validates requests and applies the order life cycle.
type OrderUsecase struct {
	repo   OrderRepo
	search OrderSearch
}

// NewOrderUsecase returns the use case over repo, without search.
func NewOrderUsecase(repo OrderRepo) *OrderUsecase { return &OrderUsecase{repo: repo} }

// WithSearch returns the use case searching with s (nil: the search read
// path is off).
func (uc *OrderUsecase) WithSearch(s OrderSearch) *OrderUsecase {
	c := *uc
	c.search = s
	return &c
}

// Searchable reports whether the search read path is on.
func (uc *OrderUsecase) Searchable() bool { return uc.search != nil }

// Search finds the customer's orders, of one status unless it is
// unspecified, in the search read model.
func (uc *OrderUsecase) Search(ctx context.Context, req *ordersv1.SearchOrdersRequest, fresh bool) ([]*ordersv1.Order, error) {
	if err := text("customer_id", req.GetCustomerId(), 1, 200); err != nil {
		return nil, err
	}
	if _, known := ordersv1.OrderStatus_name[int32(req.GetStatus())]; !known {
		return nil, InvalidArgument("status", "unknown order status %d", req.GetStatus())
	}
	if uc.search == nil {
		return nil, SearchDisabled()
	}
	return uc.search.Search(ctx, req.GetCustomerId(), req.GetStatus(), fresh)
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// Place validates and places a new order.
func (uc *OrderUsecase) Place(ctx context.Context, req *ordersv1.PlaceOrderRequest) (*Change, error) {
	if err := text("customer_id", req.GetCustomerId(), 1, 200); err != nil {
		return nil, err
	}
	if req.GetAmountCents() <= 0 {
		return nil, InvalidArgument("amount_cents", "must be > 0, got %d", req.GetAmountCents())
	}
	if !currency.MatchString(req.GetCurrency()) {
		return nil, InvalidArgument("currency", "%q is not an ISO 4217 code (three capital letters)", req.GetCurrency())
	}
	return uc.repo.Place(ctx, req.GetCustomerId(), req.GetAmountCents(), req.GetCurrency())
}

// Pay moves a placed order to paid.
func (uc *OrderUsecase) Pay(ctx context.Context, req *ordersv1.PayOrderRequest) (*Change, error) {
	id, err := orderID(req.GetId())
	if err != nil {
		return nil, err
	}
	if err := text("payment_ref", req.GetPaymentRef(), 1, 200); err != nil {
		return nil, err
	}
	return uc.repo.Pay(ctx, id, req.GetPaymentRef(), func(cur *ordersv1.Order) error {
		if cur.GetStatus() != ordersv1.OrderStatus_ORDER_STATUS_PLACED {
			return StateConflict("order %s is %s: only a placed order can be paid", id, cur.GetStatus())
		}
		return nil
	})
}

// Cancel cancels a placed or paid order.
func (uc *OrderUsecase) Cancel(ctx context.Context, req *ordersv1.CancelOrderRequest) (*Change, error) {
	id, err := orderID(req.GetId())
	if err != nil {
		return nil, err
	}
	if err := text("reason", req.GetReason(), 0, 500); err != nil {
		return nil, err
	}
	return uc.repo.Cancel(ctx, id, req.GetReason(), func(cur *ordersv1.Order) error {
		if cur.GetStatus() == ordersv1.OrderStatus_ORDER_STATUS_CANCELLED {
			return StateConflict("order %s is already cancelled", id)
		}
		return nil
	})
}

// Get reads an order from the source of truth.
func (uc *OrderUsecase) Get(ctx context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.Order, error) {
	id, err := orderID(req.GetId())
	if err != nil {
		return nil, err
	}
	return uc.repo.Get(ctx, id)
}

// CustomerSummary reads the customer's summary from the read model.
func (uc *OrderUsecase) CustomerSummary(ctx context.Context, req *ordersv1.GetCustomerSummaryRequest) (*ordersv1.CustomerSummary, error) {
	if err := text("customer_id", req.GetCustomerId(), 1, 200); err != nil {
		return nil, err
	}
	return uc.repo.CustomerSummary(ctx, req.GetCustomerId())
}

func orderID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, InvalidArgument("id", "%q is not a UUID", s)
	}
	return id, nil
}

// text checks a free-text field: valid UTF-8 without NUL (Postgres refuses
// it), between min and max characters.
func text(field, s string, min, max int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return InvalidArgument(field, "must be valid UTF-8 without NUL characters")
	case n < min || n > max:
		return InvalidArgument(field, "must be %d to %d characters, got %d", min, max, n)
	}
	return nil
}
