// Package migrations embeds the eventrelay schema (goose SQL migrations).
//
// The SQL uses unqualified table names; apply it with search_path set to the
// target schema (internal/postgres does this and creates the schema first).
package migrations

import "embed"

// FS holds the *.sql migrations in goose format.
//
//go:embed *.sql
var FS embed.FS
