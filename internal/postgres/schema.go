package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres/schemadb"
)

// PublisherTables are the tables the publisher needs, all created by
// eventrelay's set (migrations/; its version table records that relayctl
// migrate up ran). A service lists its own daemons' tables with its set.
var PublisherTables = []string{"eventrelay_goose_db_version", "outbox_events", "outbox_partitions", "outbox_publishers", "outbox_wakeups"}

// CheckSchema reports whether the schema the pool works in (the first
// entry of the search_path Open set) holds tables. A missing table is a
// schema_missing error (transient) that says to run relayctl migrate up;
// a table the role holds no privilege on is permission_denied; a failing
// query is classified as usual.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, tables []string) error {
	schema := PoolSchema(pool)
	present, err := schemadb.New(pool).PresentRelations(ctx, schemadb.PresentRelationsParams{SchemaName: schema, Names: tables})
	if err != nil {
		return fmt.Errorf("checking the tables of schema %s: %w", schema, Classify(err))
	}
	var missing []string
	for _, t := range tables {
		if !slices.Contains(present, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return errclass.Newf(errclass.SchemaMissing,
			"schema %q lacks %s: the database is not migrated or DATABASE_SCHEMA is wrong; run relayctl migrate up (with the same DATABASE_URL and DATABASE_SCHEMA)",
			schema, strings.Join(missing, ", "))
	}
	// The tables exist; the role must also be allowed to use them (the
	// migrations' version tables are only the migration user's).
	var data []string
	for _, t := range tables {
		if !strings.HasSuffix(t, "goose_db_version") {
			data = append(data, t)
		}
	}
	unusable, err := schemadb.New(pool).UnusableRelations(ctx, schemadb.UnusableRelationsParams{SchemaName: schema, Names: data})
	if err != nil {
		return fmt.Errorf("checking the privileges on schema %s: %w", schema, Classify(err))
	}
	if len(unusable) > 0 {
		return errclass.Newf(errclass.PermissionDenied,
			"schema %q is migrated but this role holds no privilege on %s (or no USAGE on the schema): grant them (docs/deploy-gke.md, database roles and grants)",
			schema, strings.Join(unusable, ", "))
	}
	return nil
}

// PoolSchema is the schema a pool works in: the first entry of its
// search_path ("" when it sets none).
func PoolSchema(pool *pgxpool.Pool) string {
	return firstSchema(pool.Config().ConnConfig.RuntimeParams["search_path"])
}

// firstSchema is the first entry of a search_path.
func firstSchema(path string) string {
	first, _, _ := strings.Cut(path, ",")
	return strings.Trim(strings.TrimSpace(first), `"`)
}
