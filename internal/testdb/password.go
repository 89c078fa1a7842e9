package testdb

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PasswordRole is the one role whose password the test server checks
// (scripts/pg.sh adds its pg_hba line); every other role is trusted.
const PasswordRole = "eventrelay_password_check"

// PasswordRoleURL creates PasswordRole with the password "right" (if it
// is missing) through pool, and returns dbURL logged in as PasswordRole
// with password: "right" connects, any other is refused (SQLSTATE 28P01).
func PasswordRoleURL(t testing.TB, pool *pgxpool.Pool, dbURL, password string) string {
	t.Helper()
	_, err := pool.Exec(context.Background(), `DO $$ BEGIN
		CREATE ROLE `+PasswordRole+` LOGIN PASSWORD 'right';
	EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
	if err != nil {
		t.Fatalf("testdb: creating role %s: %v", PasswordRole, err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	u.User = url.UserPassword(PasswordRole, password)
	return u.String()
}
