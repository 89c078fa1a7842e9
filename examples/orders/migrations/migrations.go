package migrations

import (
	"embed"

	"github.com/eventrelay/eventrelay/migrations"
)

//go:embed *.sql
var sqlFS embed.FS

// Set is the orders service's goose migration set. Its version table is
// its own, so it never collides with eventrelay's set applied to the same
// schema. Apply eventrelay's set first:
//
//	migrations.Up(ctx, pool, "orders", migrations.Eventrelay, ordersmigrations.Set)
var Set = migrations.Set{Name: "orders", FS: sqlFS, VersionTable: "orders_goose_db_version"}

// Sets are the sets the orders schema needs, in the order to apply them.
var Sets = []migrations.Set{migrations.Eventrelay, Set}
