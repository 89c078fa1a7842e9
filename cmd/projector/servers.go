package main

import (
	"context"
	"log/slog"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/transport"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	catproj "github.com/eventrelay/eventrelay/internal/catalog/projection"
	"github.com/eventrelay/eventrelay/internal/elastic"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/projector"
	pconf "github.com/eventrelay/eventrelay/internal/projector/conf"
	"github.com/eventrelay/eventrelay/internal/version"
	"github.com/eventrelay/eventrelay/projection"
)

// receivers are the transport.Servers of the enabled projections.
type receivers []*projector.Receiver

// newReceivers builds one engine and receiver per enabled projection, each
// with its own subscription, inbox consumer and dead-letter topic.
func newReceivers(cfg *pconf.Config, pool *pgxpool.Pool, ps *pubsub.Client, m *projector.Metrics,
	health *health.Health, logger *slog.Logger, videos *catproj.Videos, es *elastic.Client) (receivers, func(), error) {
	var out receivers
	var stops []func()
	cleanup := func() {
		for _, s := range stops {
			s()
		}
	}
	opts := func(name, consumer, dlqTopic string) projector.Options {
		dl := projector.NewTopicDeadLetterer(ps, dlqTopic)
		stops = append(stops, dl.Stop)
		return projector.Options{Name: name, Consumer: consumer, Batch: cfg.Batch, DeadLetter: dl, Metrics: m, Logger: logger}
	}
	if cfg.Videos.Enabled {
		reg := projection.NewRegistry[projection.TxHandler]()
		if err := catproj.Register[projection.TxHandler](reg, videos); err != nil {
			return nil, cleanup, err
		}
		e, err := projector.NewTxEngine(pool, reg, opts("videos", catproj.VideosConsumer, cfg.Videos.DeadLetterTopic))
		if err != nil {
			return nil, cleanup, err
		}
		out = append(out, gated(projector.NewReceiver(ps, cfg.Videos.Subscription, e, cfg.Receive, health, logger), pool))
	}
	if cfg.Search.Enabled {
		reg := projection.NewRegistry[projection.BatchHandler]()
		if err := catproj.Register[projection.BatchHandler](reg, catproj.NewSearch(es, cfg.Search.Alias)); err != nil {
			return nil, cleanup, err
		}
		e, err := projector.NewBatchEngine(pool, reg, opts("search", catproj.SearchConsumer, cfg.Search.DeadLetterTopic))
		if err != nil {
			return nil, cleanup, err
		}
		out = append(out, gated(projector.NewReceiver(ps, cfg.Search.Subscription, e, cfg.Receive, health, logger), pool))
	}
	return out, cleanup, nil
}

// gated makes r wait for the projector's tables before it receives: on an
// unmigrated database (or a wrong DATABASE_SCHEMA) every message would
// fail, and the subscription's dead-letter policy would move them away.
func gated(r *projector.Receiver, pool *pgxpool.Pool) *projector.Receiver {
	r.RequireBeforeReceive(func(ctx context.Context) error {
		return postgres.CheckSchema(ctx, pool, postgres.ProjectorTables)
	})
	return r
}

func newOpsServer(cfg *pconf.Config, h *health.Health, reg prometheus.Gatherer) *khttp.Server {
	return health.NewServer(cfg.HTTP.Addr(), h, reg)
}

// newApp is the Kratos app: on SIGTERM/SIGINT /readyz fails first, then
// every receiver stops pulling and settles its in-flight messages.
func newApp(cfg *pconf.Config, rs receivers, opsSrv *khttp.Server, health *health.Health, logger *slog.Logger) *kratos.App {
	servers := []transport.Server{opsSrv}
	for _, r := range rs {
		servers = append(servers, r)
	}
	return kratos.New(
		kratos.Name("projector"),
		kratos.Version(version.Get()),
		kratos.Server(servers...),
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
