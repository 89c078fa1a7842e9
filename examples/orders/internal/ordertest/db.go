package ordertest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/eventrelay/eventrelay/relaytest"

	"github.com/eventrelay/eventrelay/examples/orders/migrations"
)

// NewDB returns a fresh database for t with eventrelay's tables and the
// orders service's tables in one schema; its Pool's search_path is that
// schema.
func NewDB(t testing.TB) *relaytest.DB {
	t.Helper()
	db := relaytest.NewDB(t)
	ctx := context.Background()
	cc, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cc.RuntimeParams["search_path"] = relaytest.Schema
	sqlDB := stdlib.OpenDB(*cc)
	defer sqlDB.Close()
	store, err := database.NewStore(database.DialectPostgres, relaytest.Schema+"."+migrations.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider("", sqlDB, migrations.FS, goose.WithStore(store), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("applying the orders migrations: %v", err)
	}
	return db
}
