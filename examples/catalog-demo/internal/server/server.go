package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/middleware"
	"github.com/go-kratos/kratos/v2/middleware/recovery"
	"github.com/go-kratos/kratos/v2/middleware/tracing"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
)

// ProviderSet is the server layer's providers.
var ProviderSet = wire.NewSet(NewGRPCServer, NewHTTPServer, health.NewRegistry,
	wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)))

// middlewares is the chain both transports run, outermost first.
func middlewares(log *slog.Logger) []middleware.Middleware {
	return []middleware.Middleware{
		recovery.Recovery(),
		tracing.Server(),
		observe(log),
	}
}
