package command

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
)

// TestGrants: the printed SQL grants each named role exactly what its
// daemon's readiness checks (a role named twice gets the union) and
// touches nothing; --apply needs --by and --why, grants it in one
// transaction and audits the SQL; a flag without a role is refused.
func TestGrants(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	pub, svc := db.Name+"_publisher", db.Name+"_service"
	for _, r := range []string{pub, svc} {
		exec(t, db, "CREATE ROLE "+r+" NOLOGIN")
		t.Cleanup(func() { exec(t, db, "DROP OWNED BY "+r+"; DROP ROLE "+r) })
	}

	r := relayctl(t, env, "grants", "--publisher", pub, "--writer", svc, "--writer-tables", "items:SELECT+insert",
		"--projector", svc, "--projector-tables", "item_view")
	if r.code != ExitOK {
		t.Fatalf("print: exit %d, stderr %q", r.code, r.stderr)
	}
	on := func(table, role string) string {
		return pgx.Identifier{testSchema, table}.Sanitize() + " TO " + pgx.Identifier{role}.Sanitize() + ";"
	}
	for _, want := range []string{
		"GRANT SELECT, UPDATE, DELETE ON " + on("outbox_events", pub),
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + on("outbox_claims", pub),
		"GRANT SELECT, INSERT ON " + on("outbox_events", svc),
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + on("inbox_events", svc),
		"GRANT SELECT, INSERT, UPDATE, DELETE ON " + on("item_view", svc),
		"GRANT SELECT, INSERT ON " + on("items", svc),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("printed SQL lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM information_schema.role_table_grants WHERE grantee IN ($1, $2)`, pub, svc); n != 0 {
		t.Fatalf("printing granted %d privileges, want none", n)
	}

	if r := relayctl(t, env, "grants", "--publisher", pub, "--apply"); r.code != ExitUsage || !strings.Contains(r.stderr, "--by and --why") {
		t.Fatalf("--apply without --by/--why: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := relayctl(t, env, "grants", "--projector-tables", "item_view"); r.code != ExitUsage || !strings.Contains(r.stderr, "--projector ROLE") {
		t.Fatalf("tables without a role: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := relayctl(t, env, "grants", "--writer", svc, "--writer-tables", "items:TRUNCATE"); r.code != ExitUsage || !strings.Contains(r.stderr, `"TRUNCATE"`) {
		t.Fatalf("an unknown privilege: exit %d, stderr %q", r.code, r.stderr)
	}
	r = relayctl(t, env, "grants", "--publisher", pub, "--apply", "--by", "alice", "--why", "new cluster")
	if r.code != ExitOK || !strings.Contains(r.stdout, "granted 1 role(s)") {
		t.Fatalf("apply: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, n := range postgres.PublisherNeeds {
		for _, p := range n.Privileges {
			if count(t, db, `SELECT count(*) FROM (SELECT 1 WHERE has_table_privilege($1, $2, $3)) g`, pub, testSchema+"."+n.Table, p) != 1 {
				t.Errorf("after --apply the publisher role lacks %s on %s", p, n.Table)
			}
		}
	}
	if count(t, db, `SELECT count(*) FROM (SELECT 1 WHERE has_table_privilege($1, $2, 'INSERT')) g`, pub, testSchema+".outbox_events") != 0 {
		t.Error("the publisher role was granted INSERT on outbox_events, which it does not use")
	}
	if n := count(t, db, `SELECT count(*) FROM admin_audit WHERE command = 'grants' AND requested_by = 'alice'
		AND reason = 'new cluster' AND details->>'sql' LIKE '%outbox_claims%'`); n != 1 {
		t.Fatalf("%d audit rows for the grants, want 1", n)
	}
}
