package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/go-kratos/kratos/v2/transport/grpc"
	khttp "github.com/go-kratos/kratos/v2/transport/http"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"

	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/data"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
	"github.com/eventrelay/eventrelay/examples/orders/internal/server"
	"github.com/eventrelay/eventrelay/examples/orders/internal/service"
)

// ordersApp is the Kratos app and the servers it runs.
type ordersApp struct {
	*kratos.App
	HTTP *khttp.Server
	GRPC *grpc.Server
}

// newApp builds the orders service: its HTTP and gRPC servers and
// eventrelay's embedded servers, all started and stopped together by one
// Kratos app. On SIGTERM /readyz fails first, then every server drains.
func newApp(cfg Config, pool *pgxpool.Pool, client *pubsub.Client, logger *slog.Logger) (*ordersApp, error) {
	h := health.NewHealth(2 * time.Second)
	h.AddCheck("postgres", pool.Ping)
	metrics := health.NewRegistry()

	w, err := outbox.NewWriter(data.WriterConfig(outbox.Producer{Service: "orders", Instance: cfg.Instance}))
	if err != nil {
		return nil, fmt.Errorf("outbox writer: %w", err)
	}
	svc := service.NewOrderService(biz.NewOrderUsecase(data.NewOrderRepo(data.NewData(pool, w))), logger)
	hs := server.NewHTTPServer(cfg.HTTPAddr, cfg.Timeout, svc, h, metrics)
	gs := server.NewGRPCServer(cfg.GRPCAddr, cfg.Timeout, svc)
	servers := []transport.Server{hs, gs}

	// eventrelay: the order_summaries projector (refused messages go to the
	// dead-letter topic with their reason) and, with EmbedRelay, the relay
	// (off: the shipped cmd/publisher daemon with DATABASE_SCHEMA=orders).
	proj, err := projector.New(pool, client, projector.Options{Schema: cfg.Schema, Logger: logger, Registerer: metrics, Health: h})
	if err != nil {
		return nil, err
	}
	routes, err := orderproj.Registry()
	if err == nil {
		err = proj.Register(projector.Projection{Name: orderproj.Consumer, Consumer: orderproj.Consumer, Subscription: cfg.Subscription,
			DeadLetterTopic: cfg.DeadLetterTopic, Tx: routes, Tables: []string{"order_summaries"}})
	}
	if err != nil {
		return nil, fmt.Errorf("projection %s: %w", orderproj.Consumer, err)
	}
	servers = append(servers, proj)
	if cfg.EmbedRelay {
		r, err := relay.New(pool, client, relay.Options{Schema: cfg.Schema, Publish: relay.PublishOptions{ReadyTopic: events.Topic},
			Logger: logger, Registerer: metrics, Health: h})
		if err != nil {
			return nil, fmt.Errorf("embedded relay: %w", err)
		}
		servers = append(servers, r)
	}

	app := kratos.New(
		kratos.Name("orders"),
		kratos.StopTimeout(cfg.ShutdownTimeout),
		kratos.Server(servers...),
		kratos.BeforeStop(func(context.Context) error {
			h.SetDraining()
			return nil
		}),
	)
	return &ordersApp{App: app, HTTP: hs, GRPC: gs}, nil
}
