package embedded

import (
	"github.com/go-kratos/kratos/v2/transport"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
)

// healthPaths are the paths of health.Handler.
var healthPaths = []string{"/healthz", "/readyz", "/metrics"}

// mountHealth serves h and metrics on the first Kratos HTTP server of
// servers (routes the service registered first win: the router matches in
// order), or adds a health server on addr when there is none.
func mountHealth(servers []transport.Server, addr string, h *health.Health, metrics prometheus.Gatherer) []transport.Server {
	for _, s := range servers {
		if hs, ok := s.(*khttp.Server); ok {
			ops := health.Handler(h, metrics)
			for _, p := range healthPaths {
				hs.Handle(p, ops)
			}
			return servers
		}
	}
	return append(servers, health.NewServer(addr, h, metrics))
}
