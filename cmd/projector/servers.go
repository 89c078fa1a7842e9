package main

import (
	"context"
	"log/slog"

	"github.com/go-kratos/kratos/v2"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/catalog/elastic"
	catmigrations "github.com/eventrelay/eventrelay/internal/catalog/migrations"
	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	pconf "github.com/eventrelay/eventrelay/internal/projector/conf"
	"github.com/eventrelay/eventrelay/internal/version"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// catalogProjector is the projector with the catalog's enabled
// projections registered.
type catalogProjector struct{ *projector.Projector }

// projectorOptions maps the daemon's configuration to the projector's.
func projectorOptions(cfg *pconf.Config, reg *prometheus.Registry, h *health.Health, logger *slog.Logger) projector.Options {
	r := cfg.Receive
	return projector.Options{
		Schema: cfg.Database.Schema,
		Receive: projector.ReceiveOptions{
			MaxOutstandingMessages: r.MaxOutstandingMessages, MaxOutstandingBytes: r.MaxOutstandingBytes,
			NumGoroutines: r.NumGoroutines, MaxExtension: r.MaxExtension.D(), AckDeadline: r.AckDeadline.D(),
			RetryMin: r.RetryMin.D(), RetryMax: r.RetryMax.D(), ExactlyOnce: r.ExactlyOnce,
		},
		DrainTimeout:            cfg.ShutdownTimeout.D(),
		InboxRetentionInterval:  cfg.InboxRetention.Interval.D(),
		InboxRetentionBatchSize: cfg.InboxRetention.BatchSize,
		Logger:                  logger, Registerer: reg, Health: h,
	}
}

// registerCatalog registers the enabled projections, each with its own
// subscription, inbox consumer and dead-letter topic. Each waits for the
// projector's tables before it receives: on an unmigrated database (or a
// wrong DATABASE_SCHEMA) every message would fail, and the subscription's
// dead-letter policy would move them away.
func registerCatalog(cfg *pconf.Config, p *projector.Projector, videos *catproj.Videos, es *elastic.Client) (catalogProjector, error) {
	b := cfg.Batch
	batching := projector.BatchOptions{
		Size: b.Size, Linger: b.Linger.D(), Workers: b.Workers, Timeout: b.Timeout.D(),
		RetryBackoffMin: b.RetryBackoffMin.D(), RetryBackoffMax: b.RetryBackoffMax.D(),
	}
	if cfg.Videos.Enabled {
		reg := projection.NewRegistry[projection.TxBatchHandler]()
		if err := catproj.Register[projection.TxBatchHandler](reg, videos); err != nil {
			return catalogProjector{}, err
		}
		if err := p.Register(projector.Projection{
			Name: "videos", Consumer: catproj.VideosConsumer, Subscription: cfg.Videos.Subscription,
			DeadLetterTopic: cfg.Videos.DeadLetterTopic, TxBatch: reg, Batching: batching, Tables: catmigrations.ProjectorTables,
			InboxRetention: cfg.InboxRetention.Age.D(),
		}); err != nil {
			return catalogProjector{}, err
		}
	}
	if cfg.Search.Enabled {
		reg := projection.NewRegistry[projection.BatchHandler]()
		if err := catproj.Register[projection.BatchHandler](reg, catproj.NewSearch(es, cfg.Search.Alias)); err != nil {
			return catalogProjector{}, err
		}
		if err := p.Register(projector.Projection{
			Name: "search", Consumer: catproj.SearchConsumer, Subscription: cfg.Search.Subscription,
			DeadLetterTopic: cfg.Search.DeadLetterTopic, Batch: reg, Batching: batching, Tables: catmigrations.ProjectorTables,
			InboxRetention: cfg.InboxRetention.Age.D(),
		}); err != nil {
			return catalogProjector{}, err
		}
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
		kratos.Version(version.Get()),
		kratos.Server(opsSrv, p.Projector),
		kratos.StopTimeout(cfg.ShutdownTimeout.D()),
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
