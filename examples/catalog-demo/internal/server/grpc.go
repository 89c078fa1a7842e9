package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport/grpc"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
)

// NewGRPCServer serves catalog.v1.VideoService on c.GRPCAddr.
func NewGRPCServer(c *conf.Server, svc *service.VideoService, log *slog.Logger) *grpc.Server {
	srv := grpc.NewServer(
		grpc.Address(c.GRPCAddr),
		grpc.Timeout(c.Timeout),
		grpc.Middleware(middlewares(log)...),
	)
	catalogv1.RegisterVideoServiceServer(srv, svc)
	return srv
}
