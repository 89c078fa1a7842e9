package main

import (
	"context"
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/elastic"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
)

// catalogProjector is the projector with the catalog's enabled
// projections registered.
type catalogProjector struct{ *projector.Projector }

// projectorOptions converts the daemon's configuration into the
// projector's options.
func projectorOptions(cfg *pconf.Config, reg *prometheus.Registry, h *health.Health, logger *slog.Logger) projector.Options {
	return cfg.Options(reg, h, logger)
}

// registerCatalog registers the catalog's enabled projections.
func registerCatalog(cfg *pconf.Config, p *projector.Projector, videos *catproj.Videos, es *elastic.Client) (catalogProjector, error) {
	if err := catproj.RegisterEnabled(p, cfg.Catalog(), cfg.Batch, cfg.InboxRetention.Age, videos, es); err != nil {
		return catalogProjector{}, err
	}
	return catalogProjector{p}, nil
}

func newOpsServer(cfg *pconf.Config, h *health.Health, reg prometheus.Gatherer) *khttp.Server {
	return health.NewServer(cfg.HTTP.Addr(), h, reg)
}

// newApp is the Kratos app: on SIGTERM/SIGINT /readyz fails first, then
// every projection stops pulling and settles its in-flight messages.
func newApp(cfg *pconf.Config, p catalogProjector, opsSrv *khttp.Server, health *health.Health, logger *slog.Logger) *kratos.App {
	return kratos.New(
		kratos.Name("projector"),
		kratos.Version(version),
		kratos.Server(opsSrv, p.Projector),
		kratos.StopTimeout(cfg.Projector.DrainTimeout),
		kratos.BeforeStart(func(ctx context.Context) error {
			health.LogFailing(ctx, logger, "schema") // e.g. "run relayctl migrate up"
			return nil
		}),
		kratos.BeforeStop(func(context.Context) error {
			health.SetDraining()
			return nil
		}),
	)
}
