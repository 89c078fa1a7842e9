package migrations

import (
	"embed"

	"github.com/eventrelay/eventrelay/migrations"
)

//go:embed *.sql
var catalogFS embed.FS

// Schema is the schema the catalog's daemons and relayctl work in unless
// configured otherwise (DATABASE_SCHEMA).
const Schema = "catalog"

// Catalog is the catalog's set: videos and video_projection. Its version
// table is catalog_goose_db_version.
var Catalog = migrations.Set{Name: "catalog", FS: catalogFS, VersionTable: "catalog_goose_db_version"}

// Sets are the sets the catalog's database needs, in the order they apply:
// eventrelay's tables, then the catalog's. relayctl migrate, the demo, the
// e2e harness and the catalog's tests apply exactly these.
var Sets = []migrations.Set{migrations.Eventrelay, Catalog}

// The tables each catalog daemon checks at start (postgres.CheckSchema):
// some of eventrelay's set and some of the catalog's, whose version tables
// record that relayctl migrate up ran.
var (
	ServiceTables   = []string{"eventrelay_goose_db_version", "catalog_goose_db_version", "videos", "outbox_events", "outbox_wakeups"}
	ProjectorTables = []string{"eventrelay_goose_db_version", "catalog_goose_db_version", "inbox_events", "video_projection"}
)
