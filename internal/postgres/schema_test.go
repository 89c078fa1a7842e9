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

	err = postgres.CheckSchema(ctx, pool, postgres.PublisherTables)
	if errclass.Of(err) != errclass.PermissionDenied || !strings.Contains(err.Error(), "outbox_events") {
		t.Fatalf("no grants: %v (reason %s), want permission_denied naming outbox_events", err, errclass.Of(err))
	}
	if _, err := db.Pool.Exec(ctx, "GRANT USAGE ON SCHEMA "+db.Schema+" TO "+roleName+
		"; GRANT SELECT, UPDATE ON ALL TABLES IN SCHEMA "+db.Schema+" TO "+roleName); err != nil {
		t.Fatal(err)
	}
	if err := postgres.CheckSchema(ctx, pool, postgres.PublisherTables); err != nil {
		t.Fatalf("granted: %v", err)
	}
	err = postgres.CheckSchema(ctx, pool, append([]string{"no_such_table"}, postgres.PublisherTables...))
	if errclass.Of(err) != errclass.SchemaMissing {
		t.Fatalf("a missing table: %v, want schema_missing", err)
	}
}
