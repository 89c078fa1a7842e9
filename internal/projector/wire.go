package projector

import (
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
)

// ProviderSet provides the metrics registry (Go and process collectors
// included) and the projector's Metrics on it.
var ProviderSet = wire.NewSet(
	health.NewRegistry,
	wire.Bind(new(prometheus.Registerer), new(*prometheus.Registry)),
	wire.Bind(new(prometheus.Gatherer), new(*prometheus.Registry)),
	NewMetrics,
)
