package settings

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Database is the `database:` block every daemon's configuration shares:
// url (DATABASE_URL, never logged), schema (DATABASE_SCHEMA), max_conns
// (DATABASE_MAX_CONNS) and connect_timeout (DATABASE_CONNECT_TIMEOUT). A
// service's own daemon embeds it in its configuration struct.
type Database = postgres.Settings

// PubSub is the `pubsub:` block: project_id (PUBSUB_PROJECT_ID, required)
// and emulator_host (PUBSUB_EMULATOR_HOST; empty: Cloud Pub/Sub with
// application default credentials). Validate names the key under a prefix.
type PubSub = gpubsub.Config

// OpenPool opens a pool on d (search_path d.Schema; maxConns when d sets
// none) without waiting for Postgres: a daemon starts, and reports not
// ready, while its database is down.
func OpenPool(ctx context.Context, d Database, maxConns int32) (*pgxpool.Pool, error) {
	pc := d.Postgres()
	if pc.MaxConns == 0 {
		pc.MaxConns = maxConns
	}
	return postgres.Open(ctx, pc)
}
