package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/data"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/server"
	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestHTTPRevokedPrivilegeIsUnavailableAndNotReady runs the catalog as
// its own role (catalogmigrations.ServiceNeeds: neither owner nor
// superuser) and revokes each privilege it uses in turn: /readyz is 503
// naming the privilege; with INSERT on outbox_events revoked a write is
// 503 unavailable giving permission_denied (not 500) and stores nothing;
// after the GRANT both recover without a restart.
func TestHTTPRevokedPrivilegeIsUnavailableAndNotReady(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	pool, role := db.Role(t, "catalog", catalogmigrations.ServiceNeeds)
	pool.Close() // the service opens its own pool as the role
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	svc, d := newService(t, u.String())
	ts := httptest.NewServer(server.NewHTTPServer(serverConf, svc, data.NewHealth(d), prometheus.NewRegistry(), slog.New(slog.DiscardHandler)))
	t.Cleanup(ts.Close)
	c := client{t: t, base: ts.URL}
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	post := func() (int, []byte) {
		return c.do("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"t","duration_micros":"1000"}`)
	}
	if code, body := c.do("GET", "/readyz", ""); code != 200 {
		t.Fatalf("/readyz as the granted role: %d %s", code, body)
	}
	for _, n := range catalogmigrations.ServiceNeeds {
		for _, p := range n.Privileges {
			target := p + " ON " + db.Schema + "." + n.Table
			t.Run(p+" on "+n.Table, func(t *testing.T) {
				c.t = t
				exec("REVOKE " + target + ` FROM "` + role + `"`)
				want := p + " on " + n.Table
				if code, body := c.do("GET", "/readyz", ""); code != 503 || !bytes.Contains(body, []byte(want)) {
					t.Errorf("/readyz with %s revoked: %d %s, want 503 naming it", want, code, body)
				}
				if want == "INSERT on outbox_events" {
					var before int
					if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+db.Schema+".videos").Scan(&before); err != nil {
						t.Fatal(err)
					}
					e := c.fails("POST", "/v1/videos", `{"uploader_id":"`+uuid.NewString()+`","title":"t"}`, 503, "ERROR_REASON_UNAVAILABLE")
					if !strings.Contains(e.Message, "permission_denied") {
						t.Errorf("message %q does not give the reason permission_denied", e.Message)
					}
					var after int
					if err := db.Pool.QueryRow(ctx, "SELECT count(*) FROM "+db.Schema+".videos").Scan(&after); err != nil {
						t.Fatal(err)
					}
					if after != before {
						t.Errorf("a refused write stored %d video(s)", after-before)
					}
				}
				exec("GRANT " + target + ` TO "` + role + `"`)
				if code, body := c.do("GET", "/readyz", ""); code != 200 {
					t.Errorf("/readyz after the GRANT: %d %s", code, body)
				}
				if code, body := post(); code != 200 {
					t.Errorf("a write after the GRANT: %d %s", code, body)
				}
			})
		}
	}
}
