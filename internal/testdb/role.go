package testdb

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

var roles atomic.Int64

// Role creates a login role for db (neither superuser nor owner, trusted
// by the test server's pg_hba like every role but PasswordRole) granted
// exactly needs on db.Schema (postgres.GrantSQL: the grants of
// docs/deploy-gke.md), and returns a pool on db as that role (search_path
// db.Schema) and the role's name. The role is dropped when t ends. A test
// revokes and grants through db.Pool, the owner's.
func Role(t testing.TB, db *DB, daemon string, needs []postgres.Need, maxConns int32) (*pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("%s_%s_%d", db.Name, daemon, roles.Add(1))
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := db.Pool.Exec(ctx, "CREATE ROLE "+ident+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE"); err != nil {
		t.Fatalf("testdb: creating role %s: %v", name, err)
	}
	t.Cleanup(func() { // before the database's cleanup, registered earlier
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.Pool.Exec(ctx, "DROP OWNED BY "+ident+"; DROP ROLE IF EXISTS "+ident); err != nil {
			t.Logf("testdb: dropping role %s: %v", name, err)
		}
	})
	if _, err := db.Pool.Exec(ctx, postgres.GrantSQL(db.Schema, name, needs)); err != nil {
		t.Fatalf("testdb: granting role %s: %v", name, err)
	}
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	u.User = url.User(name)
	pool, err := postgres.Open(ctx, postgres.Config{URL: u.String(), Schema: db.Schema, MaxConns: maxConns})
	if err != nil {
		t.Fatalf("testdb: connecting as %s: %v", name, err)
	}
	t.Cleanup(pool.Close)
	var user string
	var super bool
	if err := pool.QueryRow(ctx, "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &super); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	if user != name || super {
		t.Fatalf("testdb: the pool of role %s connects as %s (superuser %v)", name, user, super)
	}
	return pool, name
}
