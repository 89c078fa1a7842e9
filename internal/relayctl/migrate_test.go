package relayctl

import (
	"context"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/relaytest"
)

func TestMigrateGuard(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}

	r := relayctl(t, env, "migrate", "status", "--json")
	if r.code != ExitOK || !strings.Contains(r.stdout, `"state":"applied"`) {
		t.Fatalf("status: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, env, "migrate", "up", "--expect-db", db.Name, "--expect-host", "127.0.0.1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "no pending migrations") {
		t.Fatalf("up with matching guard: exit %d, stdout %q", r.code, r.stdout)
	}

	// Wrong database, wrong host, wrong port: refused, nothing changes.
	for _, args := range [][]string{
		{"migrate", "up", "--expect-db", "production"},
		{"migrate", "down", "--expect-db", "production"},
		{"migrate", "up", "--expect-host", "db.prod.internal"},
		{"migrate", "up", "--expect-host", "127.0.0.1:1"},
	} {
		r = relayctl(t, env, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "refusing to migrate") {
			t.Fatalf("%v: exit %d, stderr %q; want %d and a refusal", args, r.code, r.stderr, ExitUsage)
		}
	}
	// The env guard applies too.
	r = relayctl(t, map[string]string{"DATABASE_URL": db.URL, "EVENTRELAY_MIGRATE_EXPECT_DB": "production"}, "migrate", "up")
	if r.code != ExitUsage {
		t.Fatalf("env guard: exit %d, want %d", r.code, ExitUsage)
	}
	// down without --expect-db is refused before connecting.
	r = relayctl(t, env, "migrate", "down")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--expect-db") {
		t.Fatalf("down without guard: exit %d, stderr %q", r.code, r.stderr)
	}
	var tables int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'catalog' AND tablename = 'outbox_events'").Scan(&tables); err != nil || tables != 1 {
		t.Fatalf("outbox_events after refused commands: %d tables, err %v", tables, err)
	}

	// The real thing: down to 0 with the right guard, then up again.
	r = relayctl(t, env, "migrate", "down", "--to", "0", "--expect-db", db.Name, "--by", "test", "--why", "guard test")
	if r.code != ExitOK || !strings.Contains(r.stdout, "rolled back") {
		t.Fatalf("down: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, env, "migrate", "status")
	if r.code != ExitOK || !strings.Contains(r.stdout, "pending") {
		t.Fatalf("status after down: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, env, "migrate", "up", "--expect-db", db.Name, "--expect-host", "127.0.0.1:"+port(t, db.URL))
	if r.code != ExitOK || !strings.Contains(r.stdout, "applied") {
		t.Fatalf("up: exit %d, stdout %q", r.code, r.stdout)
	}
	var audits int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM admin_audit WHERE command = 'migrate up'").Scan(&audits); err != nil || audits != 1 {
		t.Fatalf("admin_audit rows for migrate up: %d, err %v", audits, err)
	}
}
