package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/migrate"
	"github.com/eventrelay/eventrelay/internal/postgres/schemadb"
)

// CheckSchema reports whether the schema the pool works in (the first
// entry of the search_path Open set) holds the tables of needs and whether
// the role holds each privilege needs lists on them. A missing table is a
// schema_missing error (transient) that says to run relayctl migrate up;
// a privilege the role lacks is permission_denied naming each privilege
// and table ("INSERT on outbox_events"); a failing query is classified as
// usual. A Need without privileges is checked for presence only (a
// service's migration version table). When needs include eventrelay's
// version table, the schema must also be at the newest eventrelay
// migration this binary embeds (or newer: a binary rolled back runs on a
// newer schema); an older one is schema_missing naming both versions.
func CheckSchema(ctx context.Context, pool *pgxpool.Pool, needs []Need) error {
	schema := PoolSchema(pool)
	tables := Tables(needs)
	q := schemadb.New(pool)
	present, err := q.PresentRelations(ctx, schemadb.PresentRelationsParams{SchemaName: schema, Names: tables})
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
	// The tables exist; the role must also hold each privilege it uses.
	var p schemadb.MissingPrivilegesParams
	p.SchemaName = schema
	for _, n := range Merge(needs) {
		for _, priv := range n.Privileges {
			p.Names, p.Privileges = append(p.Names, n.Table), append(p.Privileges, priv)
		}
	}
	lacking, err := q.MissingPrivileges(ctx, p)
	if err != nil {
		return fmt.Errorf("checking the privileges on schema %s: %w", schema, Classify(err))
	}
	if len(lacking) > 0 {
		names := make([]string, len(lacking))
		for i, l := range lacking {
			names[i] = l.Privilege + " on " + l.Name
		}
		return errclass.Newf(errclass.PermissionDenied,
			"schema %q is migrated but this role lacks %s (or USAGE on the schema): grant them (relayctl grants; docs/deploy-gke.md, database roles and grants)",
			schema, strings.Join(names, ", "))
	}
	if slices.Contains(tables, migrate.EventrelayVersionTable) {
		return checkVersion(ctx, pool, schema)
	}
	return nil
}

// CheckReplication reports whether the pool's role may read a logical
// replication slot: the REPLICATION attribute (or superuser). A role
// without it is permission_denied naming the attribute and the grant.
func CheckReplication(ctx context.Context, pool *pgxpool.Pool) error {
	var role string
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT current_user::text, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&role, &ok); err != nil {
		return fmt.Errorf("reading the role's REPLICATION attribute: %w", Classify(err))
	}
	if !ok {
		return errclass.Newf(errclass.PermissionDenied,
			"role %q lacks the REPLICATION attribute the log mode reads its slot with: ALTER ROLE %s WITH REPLICATION (relayctl grants --publisher-mode log; on Cloud SQL run it as a cloudsqlsuperuser, with the flag cloudsql.logical_decoding=on; docs/deploy-gke.md)",
			role, pgx.Identifier{role}.Sanitize())
	}
	return nil
}

// checkVersion compares the newest eventrelay migration applied to schema
// with the newest this binary embeds.
func checkVersion(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	want := migrate.EventrelayNewest
	table := pgx.Identifier{migrate.EventrelayVersionTable}
	if schema != "" {
		table = pgx.Identifier{schema, migrate.EventrelayVersionTable}
	}
	var have int64
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(version_id), 0) FROM "+table.Sanitize()+" WHERE is_applied").Scan(&have); err != nil {
		return fmt.Errorf("reading the eventrelay migration version of schema %s: %w", schema, Classify(err))
	}
	if have < want {
		return errclass.Newf(errclass.SchemaMissing,
			"schema_outdated: schema %q is at eventrelay migration %d, this binary needs %d: run relayctl migrate up (with the same DATABASE_URL and DATABASE_SCHEMA)",
			schema, have, want)
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
