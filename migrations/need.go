package migrations

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Need is a table a role uses and the privileges it uses on it (SELECT,
// INSERT, UPDATE, DELETE; none: the table only has to exist, e.g. a set's
// version table). One list of needs per role is what GrantSQL grants and
// what Check holds at readiness, so the grants and the checks cannot
// drift apart. Fields: Table, Privileges.
type Need = postgres.Need

// What eventrelay's daemons use of the Eventrelay set, each with its
// version table: a service's role merges the list of what it runs with
// its own tables (Merge, ReadWrite).
var (
	// PublisherNeeds: the relay (claims, leases, outcomes, retention,
	// partitions, wake-ups).
	PublisherNeeds = postgres.PublisherNeeds
	// ProjectorNeeds: the projector's inbox; a projection adds its
	// read-model tables.
	ProjectorNeeds = postgres.ProjectorNeeds
	// WriterNeeds: a service's outbox writes; the service adds its own
	// tables.
	WriterNeeds = postgres.WriterNeeds
)

// ReadWrite is a Need of every one of tables with SELECT, INSERT, UPDATE
// and DELETE (a service's own table, a read model).
func ReadWrite(tables ...string) []Need { return postgres.ReadWrite(tables...) }

// Merge is the union of lists: each table once, with every privilege any
// list asks for (the role of a service that runs the outbox writer, the
// relay and the projector).
func Merge(lists ...[]Need) []Need { return postgres.Merge(lists...) }

// GrantSQL is the SQL, for the owner of the tables to run, that grants
// role USAGE on schema and exactly needs, one GRANT per table (names
// quoted here).
func GrantSQL(schema, role string, needs []Need) string {
	return postgres.GrantSQL(schema, role, needs)
}

// Check reports whether the schema pool works in (the first entry of its
// search_path) holds the tables of needs and the pool's role each
// privilege needs lists on them; a readiness check. A missing table is a
// transient schema_missing error saying to migrate; a missing privilege
// is permission_denied naming each one ("INSERT on outbox_events"). When
// needs include eventrelay's version table, the schema must also be at
// the newest Eventrelay migration (or newer). The errors carry their
// reason for projection.Classify.
func Check(ctx context.Context, pool *pgxpool.Pool, needs []Need) error {
	return postgres.CheckSchema(ctx, pool, needs)
}
