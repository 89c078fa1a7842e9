//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/service"
)

// wireApp builds the catalog app from its configuration.
func wireApp(*conf.Server, *conf.Database, *conf.Outbox, *conf.ReadPath, *elastic.Config, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(server.ProviderSet, data.ProviderSet, biz.ProviderSet, service.ProviderSet, newApp))
}
