package bench

import (
	"context"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Schema holds the eventrelay tables in the bench database.
const Schema = postgres.DefaultSchema

// DB is the bench database: dropped, re-created and migrated at the start
// of a bench run.
type DB struct {
	Pool *pgxpool.Pool
	// URL connects to the bench database (search_path is set by Config).
	URL  string
	Name string
}

// Config is the postgres.Config daemons under test use.
func (d *DB) Config() postgres.Config { return postgres.Config{URL: d.URL, Schema: Schema} }

// openDB drops and re-creates the bench database next to admin's and
// migrates it.
func openDB(ctx context.Context, admin, name string) (*DB, error) {
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("DATABASE_URL must be a postgres:// URL")
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", postgres.Redact(admin), postgres.Classify(err))
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return nil, fmt.Errorf("dropping %s: %w", name, postgres.Classify(err))
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, postgres.Classify(err))
	}
	u.Path = "/" + name
	d := &DB{URL: u.String(), Name: name}
	m, err := postgres.NewMigrator(ctx, d.Config())
	if err != nil {
		return nil, err
	}
	_, err = m.Up(ctx)
	m.Close()
	if err != nil {
		return nil, err
	}
	cfg := d.Config()
	cfg.MaxConns = 16
	if d.Pool, err = postgres.Open(ctx, cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// reset empties every table of the bench schema (TRUNCATE gives the next
// scenario fresh files: no bloat carried over).
func (d *DB) reset(ctx context.Context) error {
	_, err := d.Pool.Exec(ctx, sqlReset)
	if err != nil {
		return fmt.Errorf("resetting bench tables: %w", postgres.Classify(err))
	}
	return nil
}

// count runs a count query.
func (d *DB) count(ctx context.Context, sql string, args ...any) (int, error) {
	var n int64
	if err := d.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting: %w", postgres.Classify(err))
	}
	return int(n), nil
}

// Close closes the pool (the database stays for inspection until the next
// run drops it).
func (d *DB) Close() { d.Pool.Close() }
