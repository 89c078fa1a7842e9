package postgres

import (
	"context"

	"github.com/eventrelay/eventrelay/internal/migrate"
)

// Migrate applies sets to c.Schema (migrations.Up) through a pool opened
// for the purpose and closed before it returns: for tests, tools and
// harnesses that hold a connection string rather than a pool.
func Migrate(ctx context.Context, c Config, sets ...migrate.Set) ([]migrate.Migration, error) {
	if err := c.Validate("database"); err != nil {
		return nil, err
	}
	pool, err := Open(ctx, c)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	return migrate.Up(ctx, pool, c.Schema, sets...)
}
