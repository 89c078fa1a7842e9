//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"
	"github.com/prometheus/client_golang/prometheus"

	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
)

// wireApp builds the projector app from its configuration.
func wireApp(*pconf.Config, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(dataSet, health.NewRegistry, wire.Bind(new(prometheus.Gatherer), new(*prometheus.Registry)),
		projectorOptions, projector.ProviderSet, catproj.ProviderSet, registerCatalog, newHealth, newOpsServer, newApp))
}
