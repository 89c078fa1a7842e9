package server

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
	"github.com/eventrelay/eventrelay/health"
)

// NewHTTPServer serves the JSON API on c.HTTPAddr, with /healthz, /readyz
// and /metrics (reg's metrics) beside it. Request bodies
// over c.MaxBodyBytes are refused with 413. Every error answer is logged
// once: by the middleware (observe), or by encodeError for a request
// refused before it.
func NewHTTPServer(c *conf.Server, svc *service.VideoService, h *health.Health, reg *prometheus.Registry, log *slog.Logger) *http.Server {
	srv := http.NewServer(
		http.Address(c.HTTPAddr),
		http.Timeout(c.Timeout),
		http.Middleware(middlewares(log)...),
		http.Filter(limitBodies(c.MaxBodyBytes), markObserved), // one Filter option: a second replaces the first
		http.ErrorEncoder(encodeError(log)),
	)
	RegisterVideoServiceHTTPServer(srv, svc)
	opsHandler := health.Handler(h, reg)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		srv.Handle(p, opsHandler)
	}
	return srv
}
