package migrations

import (
	"context"
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/migrate"
)

// Set is one goose migration set: SQL files named NNNNN_name.sql in the
// goose format (-- +goose Up / Down annotations) at the root of FS, with
// their own version table. Its fields: Name identifies the set in output
// and flags (relayctl migrate --set NAME), a lower-case word; FS holds the
// set's *.sql migrations at its root; VersionTable is the set's goose
// version table, created in the target schema (for example
// "eventrelay_goose_db_version"). Validate reports a set that cannot be
// applied, naming the field.
//
// Two sets applied to one schema must have different names and version
// tables. Sets are applied in the order given and rolled back in reverse,
// so a set may depend on the tables of the sets before it.
type Set = migrate.Set

// Migration is one migration file of a set: its state (Status) or the
// outcome of running it (Up, Down).
type Migration = migrate.Migration

//go:embed *.sql
var eventrelayFS embed.FS

// Eventrelay is eventrelay's own set: the outbox, replay and admin audit,
// and inbox tables. Its version table is eventrelay_goose_db_version.
var Eventrelay = Set{Name: "eventrelay", FS: eventrelayFS, VersionTable: migrate.EventrelayVersionTable}

// Up applies every pending migration of each set, in the order given, to
// schema, creating the schema if needed, and returns the migrations it ran
// (none when everything was applied already). It stops at the first
// failure; the returned slice then ends with the migrations that did run.
//
// The statements run on connections of their own, opened with the pool's
// connection settings (pool.Config()) and search_path set to schema; the
// pool's own connections and their search_path are left alone. Concurrent
// calls on one schema wait for each other (Postgres advisory locks per
// schema, and per schema and set while a set migrates). Pass
// Eventrelay first, then the sets whose tables depend on it.
//
// A schema migrated before the split (one goose_db_version table holding
// eventrelay's versions 1 to 3 next to the catalog tables) is adopted:
// that table is renamed to eventrelay_goose_db_version, whose versions it
// records exactly, and no row of any table is touched. A schema whose
// eventrelay tables have no version table Up can recognise is refused with
// an error that says what to do; nothing is changed then.
func Up(ctx context.Context, pool *pgxpool.Pool, schema string, sets ...Set) ([]Migration, error) {
	return migrate.Up(ctx, pool, schema, sets...)
}

// Down rolls back the migrations of set newer than version (0: all of
// them), newest first, and returns those it rolled back. Roll back the sets
// that depend on set first. A schema in the pre-split layout is refused
// (run Up first, which adopts it).
func Down(ctx context.Context, pool *pgxpool.Pool, schema string, set Set, version int64) ([]Migration, error) {
	return migrate.Down(ctx, pool, schema, set, version)
}

// Status lists every migration of each set, in order, and whether it is
// applied in schema. It creates the schema and the version tables if they
// are missing (as goose does) and changes nothing else. A schema in the
// pre-split layout is refused (run Up first, which adopts it).
func Status(ctx context.Context, pool *pgxpool.Pool, schema string, sets ...Set) ([]Migration, error) {
	return migrate.Status(ctx, pool, schema, sets...)
}

// SQL renders the up migrations of set as one plain SQL script for other
// migration tools: the files in version order, each headed by a comment
// naming it and saying whether goose runs it in one transaction, with the
// file's statements and comments as written. The goose annotations
// (-- +goose Up, NO TRANSACTION, StatementBegin/End) are removed and the
// down sections left out. Table names are unqualified: run the script with
// search_path set to the target schema (SET search_path TO orders;).
//
// A file using goose's ENVSUB (environment substitution) is refused: its
// text is not the SQL that would run.
func SQL(set Set) (string, error) { return migrate.SQL(set) }
