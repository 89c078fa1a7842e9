package server

import (
	"time"

	"github.com/go-kratos/kratos/v2/middleware/recovery"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/go-kratos/kratos/v2/transport/grpc"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/service"
)

// NewGRPCServer serves orders.v1.OrderService on addr.
func NewGRPCServer(addr string, timeout time.Duration, svc *service.OrderService) *grpc.Server {
	srv := grpc.NewServer(
		grpc.Address(addr),
		grpc.Timeout(timeout),
		grpc.Middleware(recovery.Recovery(), tracing.Server()),
	)
	ordersv1.RegisterOrderServiceServer(srv, svc)
	return srv
}
