package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

const grantsUsage = `
grants [--publisher ROLE [--publisher-mode poll|log [--publication P]]]
       [--projector ROLE] [--writer ROLE]
       [--projector-tables T,...] [--writer-tables T,...]
       [--schema S] (prints the SQL) | --apply --by WHO --why WHY

Prints, or with --apply runs as the tables' owner in one transaction, the
GRANTs each daemon's database role needs on --schema: exactly the table
privileges its readiness checks (the publisher: the outbox, its claims,
partitions, publishers and wake-ups; the projector: the inbox and
--projector-tables, its read models; a service's outbox writer: its outbox
inserts and --writer-tables, the service's own tables and the read models
it answers from), and USAGE on the schema. --publisher-mode log (the
publisher's outbox.mode) adds the slots' published horizon
(outbox_log_slots), the REPLICATION attribute and the publication the
log mode streams (--publication, default eventrelay_SCHEMA; on Cloud
SQL apply as a cloudsqlsuperuser with cloudsql.logical_decoding=on). A table is granted SELECT,
INSERT, UPDATE and DELETE, or only the privileges after a colon
(video_projection:SELECT, audit:SELECT+INSERT). A role named by several flags (a service that embeds the relay and
the projector) gets the union. Without --apply nothing is read or changed:
review the SQL, or hand it to the migration tool that owns the schema.
--apply records the SQL in admin_audit.`

// runGrants prints or applies the daemons' grants (postgres.GrantSQL of
// their needs, the lists their readiness checks).
func runGrants(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "grants", grantsUsage)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	publisher := fs.String("publisher", "", "the publisher's database role (the relay: claims, marks, leases, retention)")
	projector := fs.String("projector", "", "the projector's database role (the inbox and --projector-tables)")
	writer := fs.String("writer", "", "the service's database role (its outbox writes and --writer-tables)")
	publisherMode := fs.String("publisher-mode", "poll", "the publisher's outbox.mode: poll, or log (adds REPLICATION, the publication and outbox_log_slots)")
	publication := fs.String("publication", "", "with --publisher-mode log: the publication (outbox.log.publication; default eventrelay_SCHEMA)")
	projectorTables := fs.String("projector-tables", "", "comma-separated read-model tables the projector writes, each TABLE or TABLE:PRIV+PRIV")
	writerTables := fs.String("writer-tables", "", "comma-separated tables the service's role uses (its own, the read models it reads), each TABLE or TABLE:PRIV+PRIV")
	apply := fs.Bool("apply", false, "run the GRANTs (as the tables' owner) instead of printing them; needs --by and --why")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	schema := db.schema
	if schema == "" {
		schema = c.hooks.Schema
	}
	if schema == "" {
		return usageErr("grants: no schema: set --schema or DATABASE_SCHEMA (the schema of the service's tables)")
	}
	publisherNeeds := postgres.PublisherNeeds
	switch *publisherMode {
	case "poll":
		if *publication != "" {
			return usageErr("grants: --publication needs --publisher-mode log")
		}
	case "log":
		if strings.TrimSpace(*publisher) == "" {
			return usageErr("grants: --publisher-mode log needs --publisher ROLE")
		}
		publisherNeeds = postgres.LogPublisherNeeds
		if *publication == "" {
			*publication = "eventrelay_" + schema
		}
	default:
		return usageErr("grants: --publisher-mode %q: want poll or log", *publisherMode)
	}
	roles, order, err := grantRoles(map[string]roleNeeds{
		"publisher": {*publisher, publisherNeeds, ""},
		"projector": {*projector, postgres.ProjectorNeeds, *projectorTables},
		"writer":    {*writer, postgres.WriterNeeds, *writerTables},
	})
	if err != nil {
		return err
	}
	var sql strings.Builder
	for _, r := range order {
		sql.WriteString(postgres.GrantSQL(schema, r, roles[r]))
	}
	if *publisherMode == "log" {
		sql.WriteString(postgres.ReplicationSQL(schema, strings.TrimSpace(*publisher), *publication))
	}
	if !*apply {
		fmt.Fprint(c.stdout, sql.String())
		return nil
	}
	if err := audit.require("grants --apply"); err != nil {
		return err
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sql.String()); err != nil {
			return fmt.Errorf("granting: %w", postgres.Classify(err))
		}
		id, err := writeAudit(ctx, tx, "grants", audit.by, audit.why, map[string]any{"schema": schema, "roles": order, "sql": sql.String()})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "granted %d role(s) on schema %s; audit row admin_audit.id=%d\n", len(order), schema, id)
		return nil
	})
}

// roleNeeds is one daemon's flag: its role, its own needs, and the extra
// tables (read-write) it is given.
type roleNeeds struct {
	role   string
	needs  []postgres.Need
	tables string
}

// grantRoles merges the daemons' needs per role; order is the roles in a
// stable order (publisher, projector, writer, first mention).
func grantRoles(daemons map[string]roleNeeds) (map[string][]postgres.Need, []string, error) {
	roles := map[string][]postgres.Need{}
	var order []string
	for _, name := range []string{"publisher", "projector", "writer"} {
		d := daemons[name]
		role := strings.TrimSpace(d.role)
		if role == "" {
			if strings.TrimSpace(d.tables) != "" {
				return nil, nil, usageErr("grants: --%s-tables needs --%s ROLE", name, name)
			}
			continue
		}
		needs := d.needs
		for _, t := range strings.Split(d.tables, ",") {
			if t = strings.TrimSpace(t); t == "" {
				continue
			}
			n, err := tableNeed(t)
			if err != nil {
				return nil, nil, usageErr("grants: --%s-tables: %v", name, err)
			}
			needs = postgres.Merge(needs, []postgres.Need{n})
		}
		if _, seen := roles[role]; !seen {
			order = append(order, role)
		}
		roles[role] = postgres.Merge(roles[role], needs)
	}
	if len(order) == 0 {
		return nil, nil, usageErr("grants: name at least one role (--publisher, --projector or --writer)")
	}
	return roles, order, nil
}

// tableNeed parses a --*-tables entry: TABLE (SELECT, INSERT, UPDATE and
// DELETE) or TABLE:PRIV+PRIV (e.g. video_projection:SELECT).
func tableNeed(s string) (postgres.Need, error) {
	table, privs, narrowed := strings.Cut(s, ":")
	if !narrowed {
		return postgres.ReadWrite(table)[0], nil
	}
	n := postgres.Need{Table: table}
	for _, p := range strings.Split(privs, "+") {
		p = strings.ToUpper(strings.TrimSpace(p))
		switch p {
		case "SELECT", "INSERT", "UPDATE", "DELETE":
			n.Privileges = append(n.Privileges, p)
		default:
			return n, fmt.Errorf("%q: privilege %q is not one of SELECT, INSERT, UPDATE, DELETE", s, p)
		}
	}
	return n, nil
}
