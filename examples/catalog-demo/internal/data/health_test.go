package data_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	iconf "github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestReadinessNamesRefusedCredentials: with a wrong password /readyz
// fails "postgres" as authentication_failed, not server_error. The role
// is the one whose password the test server checks (scripts/pg.sh).
func TestReadinessNamesRefusedCredentials(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	dsn := testdb.PasswordRoleURL(t, db.Pool, db.URL, "wrong")
	d, cleanup, err := data.NewData(&conf.Database{URL: dsn, Schema: catalogmigrations.Schema, ConnectTimeout: iconf.Duration(5 * time.Second)}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	r := data.NewHealth(d).Ready(context.Background())
	if msg := r.Failures["postgres"]; r.OK || !strings.Contains(msg, "authentication_failed") {
		t.Errorf("readiness with a wrong password: %+v; want postgres failing as authentication_failed", r)
	}
}
