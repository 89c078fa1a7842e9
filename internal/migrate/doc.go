// Package migrate applies goose migration sets to one Postgres schema: the
// engine behind the public package migrations (which documents it and holds
// eventrelay's own set), low in the tree so that internal/postgres and the
// test databases migrate without importing a public package.
package migrate
