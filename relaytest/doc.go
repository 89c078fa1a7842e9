// Package relaytest provides test helpers for code that uses eventrelay: a
// real Postgres database per test, cloned from a template that has the
// eventrelay migrations applied.
//
// Point TEST_DATABASE_URL (or DATABASE_URL) at a server where the user may
// create databases; `make test` starts a private one with scripts/pg.sh.
// The template is built once per migration set (its name carries a hash of
// the migration files) and shared by parallel test processes; each test gets
// its own database, dropped when the test ends.
package relaytest
