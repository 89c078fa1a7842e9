package server

import (
	"context"
	"net/http"
	"time"

	"github.com/go-kratos/kratos/v2/middleware/recovery"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	khttp "github.com/go-kratos/kratos/v2/transport/http"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/service"
)

// NewHTTPServer serves the JSON routes of orders.v1.OrderService on addr
// (embedded mounts eventrelay's /healthz, /readyz and /metrics on it).
func NewHTTPServer(addr string, timeout time.Duration, svc *service.OrderService) *khttp.Server {
	srv := khttp.NewServer(
		khttp.Address(addr),
		khttp.Timeout(timeout),
		khttp.Middleware(recovery.Recovery(), tracing.Server()),
	)
	r := srv.Route("/")
	r.POST("/v1/orders", route(ordersv1.OrderService_PlaceOrder_FullMethodName, bindBody, svc.PlaceOrder))
	r.POST("/v1/orders/{id}/pay", route(ordersv1.OrderService_PayOrder_FullMethodName, bindBodyAndVars, svc.PayOrder))
	r.POST("/v1/orders/{id}/cancel", route(ordersv1.OrderService_CancelOrder_FullMethodName, bindBodyAndVars, svc.CancelOrder))
	r.GET("/v1/orders/{id}", route(ordersv1.OrderService_GetOrder_FullMethodName, bindVars, svc.GetOrder))
	r.GET("/v1/customers/{customer_id}/summary", route(ordersv1.OrderService_GetCustomerSummary_FullMethodName, bindVars, svc.GetCustomerSummary))
	r.GET("/v1/customers/{customer_id}/orders", route(ordersv1.OrderService_SearchOrders_FullMethodName, bindQueryAndVars, svc.SearchOrders))

	return srv
}

// route binds the request, then calls the method through the server's
// middleware under its gRPC name (as protoc-gen-go-http generates it).
func route[Req, Resp any](operation string, bind func(khttp.Context, any) error, call func(context.Context, *Req) (Resp, error)) khttp.HandlerFunc {
	return func(ctx khttp.Context) error {
		in := new(Req)
		if err := bind(ctx, in); err != nil {
			return err
		}
		khttp.SetOperation(ctx, operation)
		h := ctx.Middleware(func(ctx context.Context, req any) (any, error) {
			return call(ctx, req.(*Req))
		})
		out, err := h(ctx, in)
		if err != nil {
			return err
		}
		return ctx.Result(http.StatusOK, out)
	}
}

func bindBody(ctx khttp.Context, in any) error { return ctx.Bind(in) }
func bindVars(ctx khttp.Context, in any) error { return ctx.BindVars(in) }

func bindQueryAndVars(ctx khttp.Context, in any) error {
	if err := ctx.BindQuery(in); err != nil {
		return err
	}
	return ctx.BindVars(in)
}

func bindBodyAndVars(ctx khttp.Context, in any) error {
	if err := ctx.Bind(in); err != nil {
		return err
	}
	return ctx.BindVars(in)
}
