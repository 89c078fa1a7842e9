package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/eventrelay/eventrelay/migrations"
)

// Migrator applies the embedded migrations to one schema.
type Migrator struct {
	db       *sql.DB
	provider *goose.Provider
}

// NewMigrator connects (database/sql over pgx) with search_path = c.Schema,
// creating the schema if needed. Close it when done.
func NewMigrator(ctx context.Context, c Config) (*Migrator, error) {
	if err := c.Validate("database"); err != nil {
		return nil, err
	}
	cc, err := pgx.ParseConfig(c.URL)
	if err != nil {
		return nil, fmt.Errorf("parsing database url: %s", scrub(err))
	}
	cc.RuntimeParams["search_path"] = SearchPath(c.Schema)
	db := stdlib.OpenDB(*cc)
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{c.Schema}.Sanitize()); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating schema %s: %w", c.Schema, Classify(err))
	}
	store, err := database.NewStore(database.DialectPostgres, c.Schema+".goose_db_version")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("creating goose store: %w", err)
	}
	p, err := goose.NewProvider("", db, migrations.FS, goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("loading migrations: %w", err)
	}
	return &Migrator{db: db, provider: p}, nil
}

// Up applies every pending migration.
func (m *Migrator) Up(ctx context.Context) ([]*goose.MigrationResult, error) {
	res, err := m.provider.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("migrating up: %w", err)
	}
	return res, nil
}

// DownTo rolls back to version (0 = everything).
func (m *Migrator) DownTo(ctx context.Context, version int64) ([]*goose.MigrationResult, error) {
	res, err := m.provider.DownTo(ctx, version)
	if err != nil {
		return res, fmt.Errorf("migrating down: %w", err)
	}
	return res, nil
}

// Down rolls back the most recent migration.
func (m *Migrator) Down(ctx context.Context) (*goose.MigrationResult, error) {
	res, err := m.provider.Down(ctx)
	if err != nil {
		return res, fmt.Errorf("migrating down: %w", err)
	}
	return res, nil
}

// Status lists every migration and whether it is applied.
func (m *Migrator) Status(ctx context.Context) ([]*goose.MigrationStatus, error) {
	st, err := m.provider.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading migration status: %w", err)
	}
	return st, nil
}

// Close releases the connection.
func (m *Migrator) Close() error { return m.db.Close() }
