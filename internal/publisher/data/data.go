package data

import (
	"context"
	"fmt"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
)

// ProviderSet is the data layer's wire providers.
var ProviderSet = wire.NewSet(
	NewPool, NewPubSubClient, NewStore, NewSink, NewListener,
	wire.Bind(new(biz.Store), new(*Store)),
	wire.Bind(new(biz.Sink), new(*Sink)),
	wire.Bind(new(biz.Wakeup), new(*Listener)),
)

// NewPool opens the Postgres pool. It does not wait for the server: the
// publisher starts (not ready) while Postgres is down.
func NewPool(cfg config.Database) (*pgxpool.Pool, func(), error) {
	pool, err := postgres.Open(context.Background(), config.PoolConfig(cfg))
	if err != nil {
		return nil, nil, fmt.Errorf("opening postgres: %w", err)
	}
	return pool, pool.Close, nil
}

// NewPubSubClient connects to Pub/Sub (or the emulator).
func NewPubSubClient(cfg gpubsub.Config) (*pubsub.Client, func(), error) {
	c, err := gpubsub.NewClient(context.Background(), cfg)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { _ = c.Close() }, nil
}
