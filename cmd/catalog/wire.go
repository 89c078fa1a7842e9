//go:build wireinject

package main

import (
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	"github.com/google/wire"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/internal/catalog/biz"
	"github.com/eventrelay/eventrelay/internal/catalog/conf"
	"github.com/eventrelay/eventrelay/internal/catalog/data"
	"github.com/eventrelay/eventrelay/internal/catalog/server"
	"github.com/eventrelay/eventrelay/internal/catalog/service"
)

// wireApp builds the catalog app from its configuration.
func wireApp(*conf.Server, *conf.Database, *conf.Outbox, *conf.ReadPath, *elastic.Config, *slog.Logger) (*kratos.App, func(), error) {
	panic(wire.Build(server.ProviderSet, data.ProviderSet, biz.ProviderSet, service.ProviderSet, newApp))
}
