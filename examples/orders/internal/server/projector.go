package server

import (
	"fmt"
	"log/slog"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"

	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// ProjectorConfig names the Pub/Sub resources of the order_summaries
// projection.
type ProjectorConfig struct {
	Schema          string
	Subscription    string
	DeadLetterTopic string
}

// NewProjector is eventrelay's projector embedded in the orders app, with
// one projection: order_summaries (inbox consumer "order-summaries"),
// applied per event in the Postgres transaction that records the inbox
// row; refused messages go to DeadLetterTopic with their reason. It
// registers its loop and checks in h and its projector_* metrics in reg,
// and is a Kratos transport.Server.
func NewProjector(pool *pgxpool.Pool, client *pubsub.Client, c ProjectorConfig, h *health.Health, reg prometheus.Registerer, log *slog.Logger) (*projector.Projector, error) {
	p, err := projector.New(pool, client, projector.Options{Schema: c.Schema, Logger: log, Registerer: reg, Health: h})
	if err != nil {
		return nil, err
	}
	routes, err := orderproj.Registry()
	if err != nil {
		return nil, err
	}
	err = p.Register(projector.Projection{
		Name:            orderproj.Consumer,
		Subscription:    c.Subscription,
		Consumer:        orderproj.Consumer,
		DeadLetterTopic: c.DeadLetterTopic,
		Tx:              routes,
		Tables:          []string{"order_summaries"},
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", orderproj.Consumer, err)
	}
	return p, nil
}
