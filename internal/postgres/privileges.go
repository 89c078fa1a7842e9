package postgres

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Need is a table a daemon uses and the privileges it uses on it. The
// same list grants a daemon's role (GrantSQL) and is what its readiness
// checks, privilege by privilege (CheckSchema).
type Need struct {
	Table      string
	Privileges []string // SELECT, INSERT, UPDATE, DELETE
}

// All four table privileges a daemon reads and writes with.
var readWrite = []string{"SELECT", "INSERT", "UPDATE", "DELETE"}

// ReadWrite is Need of every one of tables with SELECT, INSERT, UPDATE and
// DELETE (a read model, a service's own table).
func ReadWrite(tables ...string) []Need {
	out := make([]Need, len(tables))
	for i, t := range tables {
		out[i] = Need{Table: t, Privileges: readWrite}
	}
	return out
}

// versionNeed: every daemon's readiness compares the schema's eventrelay
// migration version with the one its binary needs.
var versionNeed = Need{Table: "eventrelay_goose_db_version", Privileges: []string{"SELECT"}}

// The eventrelay tables each daemon uses, and how: the one source of the
// grants of docs/deploy-gke.md section 5 (checked against them), of the
// test kit's roles (testdb.Role, relaytest.StartPipeline) and
// of the daemons' readiness.
var (
	// PublisherNeeds: claims (and their leases), outcomes, retention,
	// partitions, wake-ups.
	PublisherNeeds = []Need{versionNeed,
		{Table: "outbox_events", Privileges: []string{"SELECT", "UPDATE", "DELETE"}},
		{Table: "outbox_claims", Privileges: readWrite},
		{Table: "outbox_partitions", Privileges: readWrite},
		{Table: "outbox_publishers", Privileges: readWrite},
		{Table: "outbox_wakeups", Privileges: readWrite},
	}
	// LogPublisherNeeds: the publisher in the log mode (outbox.mode: log):
	// the polling publisher's tables (a service switches between modes;
	// the log mode fails rows, re-drives keys and runs retention on
	// outbox_events) and each slot's published horizon. The role also
	// needs the REPLICATION attribute (ReplicationSQL), which readiness
	// checks (CheckReplication).
	LogPublisherNeeds = Merge(PublisherNeeds, []Need{
		{Table: "outbox_log_slots", Privileges: []string{"SELECT", "INSERT", "UPDATE"}},
	})
	// ProjectorNeeds: the inbox (dedup; retention's DELETE picks its rows
	// FOR UPDATE SKIP LOCKED, which needs UPDATE); a projection adds its
	// read-model tables.
	ProjectorNeeds = []Need{versionNeed,
		{Table: "inbox_events", Privileges: readWrite},
	}
	// WriterNeeds: a service's outbox writes (INSERT ... RETURNING needs
	// SELECT; outbox_notify, SECURITY INVOKER, reads outbox_wakeups); the
	// service adds its own tables.
	WriterNeeds = []Need{versionNeed,
		{Table: "outbox_events", Privileges: []string{"SELECT", "INSERT"}},
		{Table: "outbox_wakeups", Privileges: []string{"SELECT"}},
	}
)

// Tables are the distinct tables of needs, in order.
func Tables(needs []Need) []string {
	var out []string
	for _, n := range needs {
		if !slices.Contains(out, n.Table) {
			out = append(out, n.Table)
		}
	}
	return out
}

// Merge is the union of lists of needs: each table once, with every
// privilege any list asks for, in a stable order (the role of a service
// that embeds the relay and the projector).
func Merge(lists ...[]Need) []Need {
	var out []Need
	for _, l := range lists {
		for _, n := range l {
			i := slices.IndexFunc(out, func(o Need) bool { return o.Table == n.Table })
			if i < 0 {
				out = append(out, Need{Table: n.Table})
				i = len(out) - 1
			}
			for _, p := range n.Privileges {
				if !slices.Contains(out[i].Privileges, p) {
					out[i].Privileges = append(out[i].Privileges, p)
				}
			}
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Privileges, func(a, b string) int {
			return slices.Index(readWrite, a) - slices.Index(readWrite, b)
		})
	}
	return out
}

// GrantSQL is the SQL that grants role (a role name, quoted here) USAGE on
// schema and exactly needs, one GRANT per table, for the owner of the
// tables to run.
func GrantSQL(schema, role string, needs []Need) string {
	var b strings.Builder
	r := pgx.Identifier{role}.Sanitize()
	fmt.Fprintf(&b, "GRANT USAGE ON SCHEMA %s TO %s;\n", pgx.Identifier{schema}.Sanitize(), r)
	for _, n := range Merge(needs) {
		if len(n.Privileges) == 0 {
			continue // checked for presence only
		}
		fmt.Fprintf(&b, "GRANT %s ON %s TO %s;\n", strings.Join(n.Privileges, ", "), pgx.Identifier{schema, n.Table}.Sanitize(), r)
	}
	return b.String()
}

// ReplicationSQL is the SQL, beside GrantSQL's, that lets role read the
// outbox from a logical replication slot: the REPLICATION attribute (on
// Cloud SQL, run by a cloudsqlsuperuser) and publication, the inserts and
// updates of schema.outbox_events, created when missing (only the table's
// owner can create it; the relay creates it itself when it runs as the
// owner).
func ReplicationSQL(schema, role, publication string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ALTER ROLE %s WITH REPLICATION;\n", pgx.Identifier{role}.Sanitize())
	fmt.Fprintf(&b, "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_publication WHERE pubname = %s) THEN CREATE PUBLICATION %s FOR TABLE %s WITH (publish = 'insert, update'); END IF; END $$;\n",
		quoteLiteral(publication), pgx.Identifier{publication}.Sanitize(), pgx.Identifier{schema, "outbox_events"}.Sanitize())
	return b.String()
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
