package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// CheckSchema tells a role without privileges (permission_denied, naming
// the tables) from a schema without the tables (schema_missing), and
// passes once the role is granted.
func TestCheckSchemaTellsPrivilegesFromMissingTables(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	roleName := "nogrants_" + hex.EncodeToString(b)
	if _, err := db.Pool.Exec(ctx, "CREATE ROLE "+roleName+" LOGIN PASSWORD 'pw'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(context.Background(), "DROP OWNED BY "+roleName)
		_, _ = db.Pool.Exec(context.Background(), "DROP ROLE IF EXISTS "+roleName)
	})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(roleName, "pw")
	pool, err := postgres.Open(ctx, postgres.Config{URL: u.String(), Schema: db.Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	err = postgres.CheckSchema(ctx, pool, postgres.PublisherNeeds)
	if errclass.Of(err) != errclass.PermissionDenied || !strings.Contains(err.Error(), "outbox_events") {
		t.Fatalf("no grants: %v (reason %s), want permission_denied naming outbox_events", err, errclass.Of(err))
	}
	if _, err := db.Pool.Exec(ctx, "GRANT USAGE ON SCHEMA "+db.Schema+" TO "+roleName+
		"; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+db.Schema+" TO "+roleName); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("granted: %v", err)
	}
	err = postgres.CheckSchema(ctx, pool, append(postgres.ReadWrite("no_such_table"), postgres.PublisherNeeds...))
	if errclass.Of(err) != errclass.SchemaMissing {
		t.Fatalf("a missing table: %v, want schema_missing", err)
	}
}

// CheckSchema fails while the schema is older than the newest eventrelay
// migration the binary embeds, naming both versions, and passes once
// migrated up or newer.
func TestCheckSchemaComparesTheMigrationVersion(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if err := postgres.CheckSchema(ctx, db.Pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("migrated: %v", err)
	}
	// Version 10 has every table the publisher lists: only the version
	// tells it from the newest.
	if _, err := migrations.Down(ctx, db.Pool, db.Schema, migrations.Eventrelay, 10); err != nil {
		t.Fatal(err)
	}
	err := postgres.CheckSchema(ctx, db.Pool, postgres.PublisherNeeds)
	if errclass.Of(err) != errclass.SchemaMissing || !strings.Contains(err.Error(), "schema_outdated") ||
		!strings.Contains(err.Error(), "at eventrelay migration 10, this binary needs") {
		t.Fatalf("at version 10: %v (reason %s), want schema_missing naming the versions", err, errclass.Of(err))
	}
	if _, err := migrations.Up(ctx, db.Pool, db.Schema, migrations.Eventrelay); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, db.Pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("migrated up again: %v", err)
	}
	// A newer schema is fine: the binary was rolled back.
	if _, err := db.Pool.Exec(ctx, "INSERT INTO "+db.Schema+".eventrelay_goose_db_version (version_id, is_applied) VALUES (99999, true)"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, db.Pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("a newer schema: %v", err)
	}
}

// CheckSchema names each privilege the role lacks, table by table: a role
// granted all but one privilege of the publisher is permission_denied
// naming exactly that one, and passes once it is granted.
func TestCheckSchemaNamesEachMissingPrivilege(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	pool, role := testdb.Role(t, &testdb.DB{Pool: db.Pool, URL: db.URL, Name: db.Name, Schema: db.Schema}, "publisher", postgres.PublisherNeeds, 2)
	if err := postgres.CheckSchema(ctx, pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("granted PublisherNeeds: %v", err)
	}
	for _, n := range postgres.PublisherNeeds {
		for _, p := range n.Privileges {
			target := p + " ON " + db.Schema + "." + n.Table
			if _, err := db.Pool.Exec(ctx, "REVOKE "+target+` FROM "`+role+`"`); err != nil {
				t.Fatal(err)
			}
			err := postgres.CheckSchema(ctx, pool, postgres.PublisherNeeds)
			want := "lacks " + p + " on " + n.Table + " (or USAGE"
			if errclass.Of(err) != errclass.PermissionDenied || err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s revoked: %v (reason %s), want permission_denied naming only %q", p+" on "+n.Table, err, errclass.Of(err), want)
			}
			if _, err := db.Pool.Exec(ctx, "GRANT "+target+` TO "`+role+`"`); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.PublisherNeeds); err != nil {
		t.Fatalf("granted again: %v", err)
	}
}
