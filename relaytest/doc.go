// Package relaytest provides test helpers for code that uses eventrelay: a
// real Postgres database per test, cloned from a template database that has
// the caller's migration sets applied to the caller's schema.
//
//	db := relaytest.NewDB(t, relaytest.Options{Schema: "orders"}) // eventrelay's tables
//	db := relaytest.NewDB(t, relaytest.Options{
//		Schema:     "orders",
//		Migrations: []migrations.Set{migrations.Eventrelay, ordersSet},
//	})
//
// Schema is required: relaytest, like eventrelay's daemons, has no default
// schema.
//
// Point TEST_DATABASE_URL (or DATABASE_URL) at a server where the user may
// create databases; `make test` starts a private one with scripts/pg.sh.
// A template is built once per (schema, migration sets), its name carrying a
// hash of the schema and of every migration file, and is shared by parallel
// test processes; each test gets its own database, dropped when the test
// ends. The API exposes only pgx and migrations types.
package relaytest
