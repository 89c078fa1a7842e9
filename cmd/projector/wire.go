//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/projector"
	pconf "github.com/eventrelay/eventrelay/internal/projector/conf"
)

// wireApp builds the projector app from its configuration.
func wireApp(*pconf.Config, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(dataSet, projector.ProviderSet, catproj.ProviderSet, newHealth, newReceivers, newOpsServer, newApp))
}
