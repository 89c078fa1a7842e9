//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	"github.com/eventrelay/eventrelay/internal/publisher/server"
)

// wireApp builds the publisher from its configuration.
func wireApp(cfg config.Config, logger *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(
		wire.FieldsOf(new(config.Config), "Database", "PubSub", "Outbox", "Publish", "HTTP"),
		data.ProviderSet, biz.ProviderSet, server.ProviderSet, newApp,
	))
}
