//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/eventrelay/eventrelay/cmd/publisher/config"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/relay"
)

// wireApp builds the publisher from its configuration.
func wireApp(cfg config.Config, logger *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(
		wire.FieldsOf(new(config.Config), "Database", "PubSub", "HTTP"),
		newPool, newPubSubClient, health.NewRegistry, newHealth, relayOptions,
		relay.ProviderSet, newHTTPServer, newApp,
	))
}
