package server

import (
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
)

// ProviderSet is the server layer's wire providers.
var ProviderSet = wire.NewSet(
	NewRelayServer, NewHTTPServer, NewHealth, health.NewRegistry,
	wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)),
	wire.Bind(new(biz.Liveness), new(*health.Health)),
)
