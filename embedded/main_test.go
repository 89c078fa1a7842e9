package embedded

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kratos/kratos/v2/transport"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
)

// TestRunHelpAndUnknownFlagsStartNothing: --help exits 0 and an unknown
// flag 2, both before any connection (the environment names no database).
func TestRunHelpAndUnknownFlagsStartNothing(t *testing.T) {
	o := Options{Name: "orders"}
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, ExitOK, "Usage: orders"},
		{[]string{"--bogus"}, ExitUsage, "flag provided but not defined: -bogus"},
		{nil, ExitUsage, "DATABASE_URL is required"},
	} {
		var stderr strings.Builder
		if code := run(tc.args, getenv, io.Discard, &stderr, o); code != tc.code || !strings.Contains(stderr.String(), tc.out) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.out)
		}
	}
}

// TestRunServesUntilSIGTERM: with a valid environment run creates and
// migrates the schema, connects, serves the service's servers with the engines until
// SIGTERM, and exits 0.
func TestRunServesUntilSIGTERM(t *testing.T) {
	db := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}}) // schema shop is created and migrated by run
	ps := gpubsubtest.New(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := map[string]string{"DATABASE_URL": db.URL, "DATABASE_SCHEMA": "shop", "PUBSUB_PROJECT_ID": ps.Config.ProjectID,
		"PUBSUB_EMULATOR_HOST": ps.Addr, "HTTP_ADDR": addr}
	for k, v := range env {
		t.Setenv(k, v) // the Pub/Sub client reads PUBSUB_EMULATOR_HOST itself
	}
	o := Options{Name: "shop", Migrations: []migrations.Set{migrations.Eventrelay}, Logger: slog.New(slog.DiscardHandler),
		Servers: func(e *Engines) ([]transport.Server, error) {
			return []transport.Server{health.NewServer(e.Config.HTTPAddr, e.Health, e.Metrics)}, nil
		}}
	code := make(chan int, 1)
	go func() { code <- run(nil, os.Getenv, io.Discard, io.Discard, o) }()
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("not ready after 30s: %v", err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil { // the app's signal handler takes it
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != ExitOK {
			t.Errorf("exit %d after SIGTERM, want 0", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30s after SIGTERM")
	}
	pool, err := pgxpool.New(context.Background(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var tables int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'shop' AND tablename = 'outbox_events'").Scan(&tables); err != nil || tables != 1 {
		t.Errorf("schema shop: %d outbox_events tables (%v), want the migrated one", tables, err)
	}
}

// TestRunRelayctlWithTheServiceHooks: "relayctl" as the first argument
// runs relayctl's command set with Options.Admin, its schema defaulting to
// the service's name and its migrations to Options.Migrations.
func TestRunRelayctlWithTheServiceHooks(t *testing.T) {
	db := testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}})
	t.Setenv("DATABASE_URL", db.URL)
	t.Setenv("DATABASE_SCHEMA", "")
	o := Options{Name: "stock", Migrations: []migrations.Set{migrations.Eventrelay}}
	var stdout, stderr strings.Builder
	if code := run([]string{"relayctl", "migrate", "up", "--by", "test", "--why", "test"}, os.Getenv, &stdout, &stderr, o); code != ExitOK {
		t.Fatalf("relayctl migrate up: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var n int
	if err := db.Pool.QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = 'stock' AND table_name = 'outbox_events'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("relayctl migrate up did not create stock.outbox_events\n%s%s", stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"relayctl", "verify"}, os.Getenv, &stdout, &stderr, o); code != ExitUsage || !strings.Contains(stdout.String()+stderr.String(), "verif") {
		t.Fatalf("relayctl verify without a Verifier hook: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}
