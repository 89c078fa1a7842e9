package migrations

import "embed"

// FS holds the orders service's goose migrations (*.sql).
//
//go:embed *.sql
var FS embed.FS

// VersionTable is the goose version table of this set: the orders service's
// own, so it never collides with eventrelay's set applied to the same
// schema.
const VersionTable = "orders_goose_db_version"
