package main

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	pconf "github.com/eventrelay/eventrelay/cmd/projector/config"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/elastic"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// dataSet provides the clients of the projector's dependencies.
var dataSet = wire.NewSet(newPool, newPubSub, newElastic)

// defaultMaxConns sizes the pool when the config leaves it to us: one
// connection per batch worker of each projection, plus readiness checks.
const defaultMaxConns = 16

// newPool opens the pool without waiting for Postgres: the projector
// starts, and reports not-ready, while Postgres is down.
func newPool(cfg *pconf.Config) (*pgxpool.Pool, func(), error) {
	pc := cfg.Database.Postgres()
	if pc.MaxConns == 0 {
		pc.MaxConns = max(defaultMaxConns, int32(2*cfg.Batch.Workers+2))
	}
	pool, err := postgres.Open(context.Background(), pc)
	if err != nil {
		return nil, nil, err
	}
	return pool, pool.Close, nil
}

func newPubSub(cfg *pconf.Config) (*pubsub.Client, func(), error) {
	c, err := gpubsub.NewClient(context.Background(), cfg.PubSub)
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

// newHealth registers the readiness checks: Postgres and every enabled
// subscription are required; Elasticsearch only when
// search.require_ready (PROJECTOR_REQUIRE_ES_READY) is set.
func newHealth(cfg *pconf.Config, pool *pgxpool.Pool, ps *pubsub.Client, es *elastic.Client) *health.Health {
	h := health.NewHealth(0)
	h.AddCheck("postgres", func(ctx context.Context) error {
		if err := pool.Ping(ctx); err != nil {
			return fmt.Errorf("ping: %w", postgres.Classify(err))
		}
		return nil
	})
	h.AddCheck("schema", func(ctx context.Context) error {
		return postgres.CheckSchema(ctx, pool, postgres.ProjectorTables)
	})
	var subs []string
	if cfg.Videos.Enabled {
		subs = append(subs, cfg.Videos.Subscription)
	}
	if cfg.Search.Enabled {
		subs = append(subs, cfg.Search.Subscription)
	}
	h.AddCheck("pubsub", func(ctx context.Context) error {
		for _, s := range subs {
			name := gpubsub.SubscriptionName(cfg.PubSub.ProjectID, s)
			if _, err := ps.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: name}); err != nil {
				return fmt.Errorf("subscription %s: %w", s, gpubsub.Target{Subscription: name}.Classify(err))
			}
		}
		return nil
	})
	if es != nil && cfg.Search.RequireReady {
		h.AddCheck("elasticsearch", es.Ping)
	}
	return h
}
