package main

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/cmd/publisher/config"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// newPool opens the Postgres pool. It does not wait for the server: the
// publisher starts (not ready) while Postgres is down.
func newPool(cfg config.Database) (*pgxpool.Pool, func(), error) {
	pool, err := postgres.Open(context.Background(), config.PoolConfig(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("opening postgres: %w", err)
	}
	return pool, pool.Close, nil
}

// newPubSubClient connects to Pub/Sub (or the emulator).
func newPubSubClient(cfg gpubsub.Config) (*pubsub.Client, func(), error) {
	c, err := gpubsub.NewClient(context.Background(), cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { _ = c.Close() }, nil
}
