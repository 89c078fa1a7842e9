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

// TestGrantsLogMode: --publisher-mode log adds what the log mode's
// readiness checks: outbox_log_slots, the REPLICATION attribute and the
// publication of the outbox's inserts and updates, which --apply creates
// once (a second --apply leaves it as it is).
func TestGrantsLogMode(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	pub := db.Name + "_logpub"
	exec(t, db, "CREATE ROLE "+pub+" NOLOGIN")
	t.Cleanup(func() { exec(t, db, "DROP OWNED BY "+pub+"; DROP ROLE "+pub) })
	publication := db.Name + "_pub"
	t.Cleanup(func() { exec(t, db, "DROP PUBLICATION IF EXISTS "+publication) })

	if r := relayctl(t, env, "grants", "--writer", pub, "--publisher-mode", "log"); r.code != ExitUsage || !strings.Contains(r.stderr, "--publisher ROLE") {
		t.Fatalf("log mode without a publisher: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := relayctl(t, env, "grants", "--publisher", pub, "--publisher-mode", "wal"); r.code != ExitUsage || !strings.Contains(r.stderr, "poll or log") {
		t.Fatalf("an unknown mode: exit %d, stderr %q", r.code, r.stderr)
	}
	r := relayctl(t, env, "grants", "--publisher", pub, "--publisher-mode", "log")
	for _, want := range []string{
		"GRANT SELECT, INSERT, UPDATE ON " + pgx.Identifier{testSchema, "outbox_log_slots"}.Sanitize(),
		"ALTER ROLE " + pgx.Identifier{pub}.Sanitize() + " WITH REPLICATION;",
		"CREATE PUBLICATION " + pgx.Identifier{"eventrelay_" + testSchema}.Sanitize(),
	} {
		if r.code != ExitOK || !strings.Contains(r.stdout, want) {
			t.Errorf("printed SQL (exit %d) lacks %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	for range 2 {
		r = relayctl(t, env, "grants", "--publisher", pub, "--publisher-mode", "log", "--publication", publication,
			"--apply", "--by", "alice", "--why", "log mode")
		if r.code != ExitOK {
			t.Fatalf("apply: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
		}
	}
	if count(t, db, `SELECT count(*) FROM pg_roles WHERE rolname = $1 AND rolreplication`, pub) != 1 {
		t.Error("the publisher role lacks REPLICATION after --apply")
	}
	if count(t, db, `SELECT count(*) FROM pg_publication_tables p JOIN pg_publication USING (pubname)
		WHERE pubname = $1 AND schemaname = $2 AND tablename = 'outbox_events' AND pubinsert AND pubupdate AND NOT pubdelete`,
		publication, testSchema) != 1 {
		t.Error("the publication of the outbox's inserts and updates is missing after --apply")
	}
	if count(t, db, `SELECT count(*) FROM (SELECT 1 WHERE has_table_privilege($1, $2, 'UPDATE')) g`, pub, testSchema+".outbox_log_slots") != 1 {
		t.Error("the publisher role lacks UPDATE on outbox_log_slots after --apply")
	}
}
