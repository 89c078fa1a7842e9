// Command orders is the orders example service: a Kratos app serving
// orders.v1.OrderService over gRPC and HTTP/JSON, with eventrelay's
// projector embedded (it keeps the order_summaries read model) and
// eventrelay's health surface on its HTTP server. Every write changes the
// orders table and appends one OrderEvent to the outbox in the same
// transaction; the shipped cmd/publisher daemon (DATABASE_SCHEMA=orders)
// delivers them, or the app's embedded relay when ORDERS_EMBED_RELAY=true.
//
// Configuration is the environment (see Config). The schema must be
// migrated first: `orders-relayctl migrate up`.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relay"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil)).With("service", "orders")
	if err := run(logger); err != nil {
		logger.Error("orders stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	ctx := context.Background()
	// search_path "orders, public": the orders tables, the outbox writer
	// and the embedded relay and projector all work in the schema.
	pc, err := relay.PoolConfig(cfg.DatabaseURL, cfg.Schema)
	if err != nil {
		return fmt.Errorf("DATABASE_URL, DATABASE_SCHEMA: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("connecting to Postgres: %w", err)
	}
	defer pool.Close()
	client, err := pubsub.NewClient(ctx, cfg.ProjectID) // honours PUBSUB_EMULATOR_HOST
	if err != nil {
		return fmt.Errorf("connecting to Pub/Sub: %w", err)
	}
	defer client.Close()

	app, err := newApp(cfg, pool, client, logger)
	if err != nil {
		return err
	}
	logger.Info("orders starting", "http_addr", cfg.HTTPAddr, "grpc_addr", cfg.GRPCAddr,
		"schema", cfg.Schema, "subscription", cfg.Subscription, "embedded_relay", cfg.EmbedRelay)
	return app.Run()
}
