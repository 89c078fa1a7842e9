package conf

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// OpenPool opens a pool on d (search_path d.Schema; maxConns when d sets
// none) without waiting for Postgres: a daemon starts, and reports not
// ready, while it is down.
func OpenPool(ctx context.Context, d Database, maxConns int32) (*pgxpool.Pool, error) {
	pc := d.Postgres()
	if pc.MaxConns == 0 {
		pc.MaxConns = maxConns
	}
	return postgres.Open(ctx, pc)
}
