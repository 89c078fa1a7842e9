package service

import (
	"context"
	"log/slog"

	"github.com/go-kratos/kratos/v2/errors"

	"github.com/eventrelay/eventrelay/consistency"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// OrderService is the orders.v1.OrderService implementation.
type OrderService struct {
	ordersv1.UnimplementedOrderServiceServer
	uc     *biz.OrderUsecase
	waiter *consistency.Waiter
	log    *slog.Logger
}

// NewOrderService returns the service over uc; failures that are not API
// errors are logged to log and answered as INTERNAL without detail. Every
// write answers with its consistency token (header x-consistency-token);
// GetCustomerSummary and SearchOrders, given tokens in that header, wait
// with waiter until their read model (order_summaries, the search index)
// has applied them (nil: they read at once).
func NewOrderService(uc *biz.OrderUsecase, waiter *consistency.Waiter, log *slog.Logger) *OrderService {
	return &OrderService{uc: uc, waiter: waiter, log: log}
}

// PlaceOrder implements ordersv1.OrderServiceServer.
func (s *OrderService) PlaceOrder(ctx context.Context, req *ordersv1.PlaceOrderRequest) (*ordersv1.PlaceOrderResponse, error) {
	ch, err := s.uc.Place(ctx, req)
	if err != nil {
		return nil, s.apiError(ctx, "PlaceOrder", err)
	}
	consistency.Reply(ctx, events.TokenOf(ch.Order))
	return &ordersv1.PlaceOrderResponse{Order: ch.Order, EventId: ch.EventID.String()}, nil
}

// PayOrder implements ordersv1.OrderServiceServer.
func (s *OrderService) PayOrder(ctx context.Context, req *ordersv1.PayOrderRequest) (*ordersv1.PayOrderResponse, error) {
	ch, err := s.uc.Pay(ctx, req)
	if err != nil {
		return nil, s.apiError(ctx, "PayOrder", err)
	}
	consistency.Reply(ctx, events.TokenOf(ch.Order))
	return &ordersv1.PayOrderResponse{Order: ch.Order, EventId: ch.EventID.String()}, nil
}

// CancelOrder implements ordersv1.OrderServiceServer.
func (s *OrderService) CancelOrder(ctx context.Context, req *ordersv1.CancelOrderRequest) (*ordersv1.CancelOrderResponse, error) {
	ch, err := s.uc.Cancel(ctx, req)
	if err != nil {
		return nil, s.apiError(ctx, "CancelOrder", err)
	}
	consistency.Reply(ctx, events.TokenOf(ch.Order))
	return &ordersv1.CancelOrderResponse{Order: ch.Order, EventId: ch.EventID.String()}, nil
}

// GetOrder implements ordersv1.OrderServiceServer.
func (s *OrderService) GetOrder(ctx context.Context, req *ordersv1.GetOrderRequest) (*ordersv1.GetOrderResponse, error) {
	o, err := s.uc.Get(ctx, req)
	if err != nil {
		return nil, s.apiError(ctx, "GetOrder", err)
	}
	return &ordersv1.GetOrderResponse{Order: o}, nil
}

// GetCustomerSummary implements ordersv1.OrderServiceServer.
func (s *OrderService) GetCustomerSummary(ctx context.Context, req *ordersv1.GetCustomerSummaryRequest) (*ordersv1.GetCustomerSummaryResponse, error) {
	if _, err := consistency.Await(ctx, s.waiter, orderproj.Summaries.Name); err != nil {
		return nil, s.apiError(ctx, "GetCustomerSummary", err)
	}
	sum, err := s.uc.CustomerSummary(ctx, req)
	if err != nil {
		return nil, s.apiError(ctx, "GetCustomerSummary", err)
	}
	return &ordersv1.GetCustomerSummaryResponse{Summary: sum}, nil
}

// SearchOrders implements ordersv1.OrderServiceServer: with tokens, it
// waits until the search index holds them and searches it refreshed.
func (s *OrderService) SearchOrders(ctx context.Context, req *ordersv1.SearchOrdersRequest) (*ordersv1.SearchOrdersResponse, error) {
	if !s.uc.Searchable() {
		return nil, biz.SearchDisabled()
	}
	waited, err := consistency.Await(ctx, s.waiter, orderproj.Search.Projection.Name)
	if err != nil {
		return nil, s.apiError(ctx, "SearchOrders", err)
	}
	orders, err := s.uc.Search(ctx, req, waited)
	if err != nil {
		return nil, s.apiError(ctx, "SearchOrders", err)
	}
	return &ordersv1.SearchOrdersResponse{Orders: orders}, nil
}

// apiError passes API errors (Kratos errors with a reason) through and
// turns anything else into INTERNAL, logging the cause: storage details
// stay in the log.
func (s *OrderService) apiError(ctx context.Context, method string, err error) error {
	var ke *errors.Error
	if errors.As(err, &ke) && ke.GetReason() != "" {
		return err
	}
	s.log.ErrorContext(ctx, "request failed", "method", method, "err", err)
	return errors.InternalServer(biz.ReasonInternal, "internal error")
}
