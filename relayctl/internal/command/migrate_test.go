package command

import (
	"context"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/migrations"
)

func TestMigrateGuard(t *testing.T) {
	t.Parallel()
	db := newDB(t)
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
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = '"+testSchema+"' AND tablename = 'outbox_events'").Scan(&tables); err != nil || tables != 1 {
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

// migrate sql prints the sets' SQL (migrations.SQL, whose output the
// migration tests may apply with psql) and needs no database.
func TestMigrateSQL(t *testing.T) {
	t.Parallel()
	er, err := migrations.SQL(migrations.Eventrelay)
	if err != nil {
		t.Fatal(err)
	}
	own, err := migrations.SQL(itemsSet)
	if err != nil {
		t.Fatal(err)
	}
	r := relayctl(t, nil, "migrate", "sql")
	if r.code != ExitOK || r.stdout != er+"\n"+own {
		t.Fatalf("migrate sql: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, nil, "migrate", "sql", "--set", "items")
	if r.code != ExitOK || r.stdout != own {
		t.Fatalf("migrate sql --set items: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, nil, "migrate", "sql", "--set", "orders")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "eventrelay, items") {
		t.Fatalf("migrate sql --set orders: exit %d, stderr %q; want a usage error naming the sets", r.code, r.stderr)
	}
}

// down without --set rolls back the newest migration of the last set;
// --set picks the set; --to N needs --set.
func TestMigrateDownPerSet(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	guard := []string{"--expect-db", db.Name, "--by", "test", "--why", "per set"}

	r := relayctl(t, env, append([]string{"migrate", "down", "--to", "1"}, guard...)...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--set") {
		t.Fatalf("down --to 1 without --set: exit %d, stderr %q", r.code, r.stderr)
	}
	r = relayctl(t, env, append([]string{"migrate", "down"}, guard...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "rolled back items/00001_items.sql") {
		t.Fatalf("down: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, env, append([]string{"migrate", "down", "--set", "eventrelay"}, guard...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "rolled back eventrelay/00013_inbox_aggregate_idx.sql") {
		t.Fatalf("down --set eventrelay: exit %d, stdout %q", r.code, r.stdout)
	}
	r = relayctl(t, env, "migrate", "status")
	status := strings.Join(strings.Fields(r.stdout), " ") // column widths follow the longest file name
	for _, want := range []string{"eventrelay 3 00003_outbox_pending_key_idx.sql applied", "eventrelay 5 00005_outbox_wakeups.sql applied", "eventrelay 6 00006_outbox_notify.sql applied", "eventrelay 7 00007_outbox_status_statistics.sql applied", "eventrelay 8 00008_outbox_fillfactor.sql applied", "eventrelay 9 00009_outbox_unannounced.sql applied", "eventrelay 10 00010_outbox_claims.sql applied", "eventrelay 11 00011_outbox_fillfactor_three_versions.sql applied", "eventrelay 12 00012_outbox_log_slots.sql applied", "eventrelay 13 00013_inbox_aggregate_idx.sql pending", "items 1 00001_items.sql pending"} {
		if !strings.Contains(status, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	var items bool
	if err := db.Pool.QueryRow(context.Background(), "SELECT to_regclass('items') IS NOT NULL").Scan(&items); err != nil || items {
		t.Fatalf("items after the items set's down: %v, %v", items, err)
	}
	r = relayctl(t, env, "migrate", "up", "--set", "eventrelay")
	if r.code != ExitOK || !strings.Contains(r.stdout, "applied eventrelay/00013_inbox_aggregate_idx.sql") || strings.Contains(r.stdout, "items/") {
		t.Fatalf("up --set eventrelay: exit %d, stdout %q", r.code, r.stdout)
	}
}
