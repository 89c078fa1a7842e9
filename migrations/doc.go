// Package migrations holds eventrelay's own tables (outbox_events,
// outbox_replays, admin_audit, inbox_events) as a goose migration set, and
// applies any number of migration sets to one Postgres schema.
//
// A Set is a directory of goose SQL migrations with its own version table,
// so eventrelay's set (Eventrelay, version table eventrelay_goose_db_version)
// never collides with the goose_db_version of the service's own migrations.
// A service applies Eventrelay first, then its own sets:
//
//	err := migrations.Up(ctx, pool, "orders", migrations.Eventrelay, ordersSet)
//
// Services that run another migration tool (Flyway, Atlas, sqitch, plain
// psql) take the statements from SQL instead and keep them in their own
// history; `relayctl migrate sql` prints them.
//
// The SQL uses unqualified table names: Up runs it with search_path set to
// the target schema, which it creates if needed.
//
// Databases migrated before the split (one goose_db_version for eventrelay
// and a service's tables) are adopted by Up: see Up.
package migrations
