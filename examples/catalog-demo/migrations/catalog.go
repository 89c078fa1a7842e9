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
// table is catalog_goose_db_version; the catalog ran eventrelay before its
// tables had a set of their own, so Up adopts that layout.
var Catalog = migrations.Set{Name: "catalog", FS: catalogFS, VersionTable: "catalog_goose_db_version",
	PreSplitTables: []string{"videos", "video_projection"}}

// Sets are the sets the catalog's database needs, in the order they apply:
// eventrelay's tables, then the catalog's. relayctl migrate, the demo, the
// e2e harness and the catalog's tests apply exactly these.
var Sets = []migrations.Set{migrations.Eventrelay, Catalog}

// The tables each catalog daemon uses and the privileges it uses on them,
// checked at start and by readiness (migrations.Check) and granted to
// its role (docs/deploy-gke.md section 5, relaytest.DB.Role): eventrelay's for its part, the catalog's
// own, and the version tables that record relayctl migrate up ran.
var (
	// ReadModelTables are the projections' tables (projector.Projection.Tables).
	ReadModelTables = []string{"video_projection"}
	// ServiceNeeds: the service writes videos and the outbox, reads its
	// switches and answers reads from the read models (read path).
	ServiceNeeds = migrations.Merge(migrations.WriterNeeds, []migrations.Need{{Table: Catalog.VersionTable}},
		migrations.ReadWrite("videos"), []migrations.Need{{Table: "catalog_settings", Privileges: []string{"SELECT"}}},
		[]migrations.Need{{Table: "video_projection", Privileges: []string{"SELECT"}}})
	ProjectorNeeds = migrations.Merge(migrations.ProjectorNeeds, []migrations.Need{{Table: Catalog.VersionTable}},
		migrations.ReadWrite(ReadModelTables...))
)
