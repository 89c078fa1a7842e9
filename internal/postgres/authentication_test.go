package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestClassifyAuthenticationFailures: a wrong password (28P01) and an
// unknown role (28000) on a real server are authentication_failed, a
// transient reason, not server_error ("the server failed").
func TestClassifyAuthenticationFailures(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "auth"})
	ctx := context.Background()
	right, err := pgx.Connect(ctx, testdb.PasswordRoleURL(t, db.Pool, db.URL, "right"))
	if err != nil {
		t.Fatalf("connecting as %s with its password: %v", testdb.PasswordRole, err)
	}
	right.Close(ctx)

	unknown, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	unknown.User = url.User("eventrelay_no_such_role")
	for name, dsn := range map[string]string{
		"wrong password": testdb.PasswordRoleURL(t, db.Pool, db.URL, "wrong"),
		"unknown role":   unknown.String(),
	} {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
			t.Fatalf("%s: connected; the test server must check %s's password (start it with scripts/pg.sh, which adds the pg_hba line)", name, testdb.PasswordRole)
		}
		got := postgres.Classify(err)
		if r := errclass.Of(got); r != errclass.AuthenticationFailed || !r.Transient() {
			t.Errorf("%s: %v classified %s, want %s (transient)", name, err, r, errclass.AuthenticationFailed)
		}
	}
}
