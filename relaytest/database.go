package relaytest

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
)

// Options say what a test database holds.
type Options struct {
	// Schema receives the migrations; the pool's search_path is set to
	// it. Required (there is no default schema: a test works in the one
	// its service uses, or in any name of its own, e.g. "orders").
	Schema string
	// Migrations are applied in order (migrations.Up). Default
	// []migrations.Set{migrations.Eventrelay}; a service passes
	// Eventrelay followed by its own sets.
	Migrations []migrations.Set
	// MaxConns bounds DB.Pool (default 20).
	MaxConns int32
}

// DB is one test's private database.
type DB struct {
	// Pool has search_path set to Schema.
	Pool *pgxpool.Pool
	// URL connects to this database (without search_path: open pools on
	// it with the schema, or qualify names with Schema).
	URL string
	// Name is the database name.
	Name string
	// Schema holds the migrated tables.
	Schema string
}

// AdminURL returns the server URL tests use (TEST_DATABASE_URL, else
// DATABASE_URL), or fails the test with how to get one.
func AdminURL(t testing.TB) string {
	t.Helper()
	return testdb.AdminURL(t)
}

// NewDB creates a fresh database for t, cloned from a template database
// that has o's migrations applied to o.Schema, and drops it when t ends.
// The template is built once per (schema, migration sets) and per content
// of their files, and shared by parallel test processes.
func NewDB(t testing.TB, o Options) *DB {
	t.Helper()
	if len(o.Migrations) == 0 {
		o.Migrations = []migrations.Set{migrations.Eventrelay}
	}
	d := testdb.New(t, testdb.Options(o))
	return &DB{Pool: d.Pool, URL: d.URL, Name: d.Name, Schema: d.Schema}
}
