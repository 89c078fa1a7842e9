package data_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestReadinessNamesRefusedCredentials: with credentials the server
// refuses (a role it does not know, SQLSTATE 28000, on any server) /readyz
// fails "postgres" as authentication_failed, not server_error.
func TestReadinessNamesRefusedCredentials(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("catalog_no_such_role", "wrong")
	dsn := u.String()
	d, cleanup, err := data.NewData(&conf.Database{URL: dsn, Schema: catalogmigrations.Schema, ConnectTimeout: 5 * time.Second}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	r := data.NewHealth(d).Ready(context.Background())
	if msg := r.Failures["postgres"]; r.OK || !strings.Contains(msg, "authentication_failed") {
		t.Errorf("readiness with refused credentials: %+v; want postgres failing as authentication_failed", r)
	}
}
