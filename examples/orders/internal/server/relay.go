package server

import (
	"log/slog"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/relay"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

// NewRelay is eventrelay's relay embedded in the orders app: it publishes
// the outbox of schema (pool's search_path, see relay.PoolConfig) to
// Pub/Sub with the daemon's defaults, registering its loop and checks in h
// and its outbox_* metrics in reg. It is a Kratos transport.Server.
// Services that prefer the daemon run the shipped cmd/publisher instead
// (DATABASE_SCHEMA=orders): the same engine.
func NewRelay(pool *pgxpool.Pool, client *pubsub.Client, schema string, h *health.Health, reg prometheus.Registerer, log *slog.Logger) (*relay.Relay, error) {
	return relay.New(pool, client, relay.Options{
		Schema:     schema,
		Publish:    relay.PublishOptions{ReadyTopic: events.Topic},
		Logger:     log,
		Registerer: reg,
		Health:     h,
	})
}
