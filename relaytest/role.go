package relaytest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
)

// Role creates a login role on db, neither superuser nor owner, granted
// exactly needs on db.Schema (migrations.GrantSQL, as production grants
// it), and returns a pool on db as that role (search_path db.Schema) and
// the role's name, which starts with db.Name and name. The role is
// dropped when t ends. A test revokes and grants through db.Pool, the
// owner's, to see what its code does without a privilege.
func (db *DB) Role(t testing.TB, name string, needs []migrations.Need) (*pgxpool.Pool, string) {
	t.Helper()
	return testdb.Role(t, db.testdb(), name, needs, 10)
}

func (db *DB) testdb() *testdb.DB {
	return &testdb.DB{Pool: db.Pool, URL: db.URL, Name: db.Name, Schema: db.Schema}
}

// eventrelayOnly are eventrelay's tables no daemon of a service uses
// (relayctl's, as the operator).
var eventrelayOnly = []string{"admin_audit", "outbox_replays"}

// servicePool is a pool on db as the service's own role, as in
// production: neither owner nor superuser, granted what the embedded
// relay, the outbox writer and (with projections) the projector use on
// eventrelay's tables (the grants of docs/deploy-gke.md) and SELECT,
// INSERT, UPDATE and DELETE on the service's own tables (every other table
// of db.Schema). db.Pool stays the owner's, for the test's fixtures and
// assertions.
func servicePool(t testing.TB, db *DB, projects bool) *pgxpool.Pool {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1", db.Schema)
	if err != nil {
		t.Fatalf("relaytest: listing the tables of %s: %v", db.Schema, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("relaytest: listing the tables of %s: %v", db.Schema, err)
	}
	lists := [][]postgres.Need{postgres.PublisherNeeds, postgres.WriterNeeds}
	if projects {
		lists = append(lists, postgres.ProjectorNeeds)
	}
	eventrelay := postgres.Tables(postgres.Merge(append(lists, postgres.ProjectorNeeds)...))
	var own []string
	for _, tb := range tables {
		if !slices.Contains(eventrelay, tb) && !slices.Contains(eventrelayOnly, tb) && !strings.HasSuffix(tb, "goose_db_version") {
			own = append(own, tb)
		}
	}
	lists = append(lists, postgres.ReadWrite(own...))
	pool, _ := testdb.Role(t, db.testdb(), "service", postgres.Merge(lists...), 20)
	return pool
}
