package server

import (
	"log/slog"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// EventrelayConfig names the schema and the Pub/Sub resources of the
// order_summaries projection.
type EventrelayConfig struct {
	Schema, Subscription, DeadLetterTopic string
	// EmbedRelay adds the relay; off, the shipped cmd/publisher daemon
	// publishes the outbox (DATABASE_SCHEMA=orders): the same engine.
	EmbedRelay bool
}

// NewEventrelay returns eventrelay's servers for the orders Kratos app: the
// projector of order_summaries (refused messages go to DeadLetterTopic with
// their reason) and, with EmbedRelay, the relay publishing the outbox. Both
// register their loops and checks in h and their metrics in reg.
func NewEventrelay(pool *pgxpool.Pool, client *pubsub.Client, c EventrelayConfig, h *health.Health, reg prometheus.Registerer, log *slog.Logger) ([]transport.Server, error) {
	p, err := projector.New(pool, client, projector.Options{Schema: c.Schema, Logger: log, Registerer: reg, Health: h})
	if err != nil {
		return nil, err
	}
	routes, err := orderproj.Registry()
	if err != nil {
		return nil, err
	}
	if err := p.Register(projector.Projection{Name: orderproj.Consumer, Subscription: c.Subscription, Consumer: orderproj.Consumer,
		DeadLetterTopic: c.DeadLetterTopic, Tx: routes, Tables: []string{"order_summaries"}}); err != nil {
		return nil, err
	}
	if !c.EmbedRelay {
		return []transport.Server{p}, nil
	}
	r, err := relay.New(pool, client, relay.Options{Schema: c.Schema, Publish: relay.PublishOptions{ReadyTopic: events.Topic},
		Logger: log, Registerer: reg, Health: h})
	if err != nil {
		return nil, err
	}
	return []transport.Server{p, r}, nil
}
