package main

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/embedded"
	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	catmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/settings"
)

// dataSet provides the clients of the projector's dependencies.
var dataSet = wire.NewSet(newPool, newPubSub, newElastic)

// defaultMaxConns sizes the pool when the config leaves it to us: one
// connection per batch worker of each projection, plus readiness checks.
const defaultMaxConns = 16

// newPool opens the pool without waiting for Postgres: the projector
// starts, and reports not-ready, while Postgres is down.
func newPool(cfg *pconf.Config) (*pgxpool.Pool, func(), error) {
	pool, err := settings.OpenPool(context.Background(), cfg.Database, max(defaultMaxConns, int32(2*cfg.Batch.Workers+2)))
	if err != nil {
		return nil, nil, err
	}
	return pool, pool.Close, nil
}

func newPubSub(cfg *pconf.Config) (*pubsub.Client, func(), error) {
	c, err := embedded.NewPubSubClient(context.Background(), cfg.PubSub)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { _ = c.Close() }, nil
}

// newElastic returns the Elasticsearch client, or nil when the search
// projection is disabled. It does not contact the cluster.
func newElastic(cfg *pconf.Config) (*elastic.Client, func(), error) {
	if !cfg.Search.Enabled {
		return nil, func() {}, nil
	}
	es, err := elastic.New(cfg.Elastic)
	if err != nil {
		return nil, nil, err
	}
	return es, es.Close, nil
}

// newHealth registers the readiness checks: Postgres and the schema;
// Elasticsearch only when search.require_ready (PROJECTOR_REQUIRE_ES_READY)
// is set. Each enabled subscription is checked by its receiver
// ("receive/<projection>": the StreamingPull itself, refused when the
// subscription is missing or not permitted), not by GetSubscription, which
// roles/pubsub.subscriber does not allow (pubsub.subscriptions.get).
func newHealth(cfg *pconf.Config, pool *pgxpool.Pool, es *elastic.Client) *health.Health {
	h := health.NewHealth(0)
	h.AddCheck("postgres", func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("ping: %w", projection.PostgresError(err))
		}
		return nil
	})
	h.AddCheck("schema", func(ctx context.Context) error {
		return migrations.Check(ctx, pool, catmigrations.ProjectorNeeds)
	})
	if es != nil && cfg.Search.RequireReady {
		h.AddCheck("elasticsearch", es.Ping)
	}
	return h
}
