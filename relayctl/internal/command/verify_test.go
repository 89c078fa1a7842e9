package command

import (
	"strings"
	"testing"

	"github.com/google/uuid"
)

// verify prints what the service's Verifier reports and nothing of its
// own: the source of truth, each read model (OK, DRIFT, SKIPPED), the
// verdict; rebuild restates through the service's Rebuilder.
func TestVerifyAndRebuildPrintWhatTheHooksReport(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	for i, id := range ids {
		exec(t, db, `INSERT INTO items (id, name, version, deleted_at) VALUES ($1, 'n', $2, CASE WHEN $3 THEN now() END)`, id, i+1, i == 2)
		exec(t, db, `INSERT INTO item_view (item_id, name, version, deleted_at) VALUES ($1, 'n', $2, CASE WHEN $3 THEN now() END)`, id, i+1, i == 2)
	}
	r := relayctl(t, env, "verify")
	want := "source of truth: 3 item(s), 1 deleted\n" +
		"postgres item_view: OK (3 rows, 1 tombstones)\n" +
		"search items: SKIPPED (ITEM_SEARCH_ADDR is not set)\n" +
		"CONVERGED\n"
	if r.code != ExitOK || r.stdout != want {
		t.Fatalf("verify: exit %d, stdout\n%s\nwant exit 0 and\n%s", r.code, r.stdout, want)
	}
	if r.stderr != "WARNING: search items NOT VERIFIED: ITEM_SEARCH_ADDR is not set\n" {
		t.Fatalf("verify: stderr %q, want the Verifier's note as a warning", r.stderr)
	}

	exec(t, db, `UPDATE item_view SET version = 0 WHERE item_id = $1`, ids[1])
	r = relayctl(t, env, "verify")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "postgres item_view: DRIFT (3 rows, 1 tombstones)") ||
		!strings.Contains(r.stdout, "stale") || !strings.Contains(r.stdout, ids[1]) {
		t.Fatalf("verify with a stale row: exit %d, want %d naming %s as stale", r.code, ExitProblem, ids[1])
	}

	dry := relayctl(t, env, "rebuild", "--dry-run")
	if dry.code != ExitOK || !strings.Contains(dry.stdout, "rebuild plan: restate 3 item(s) (1 deleted, as test.item.deleted) to items.events") {
		t.Fatalf("rebuild --dry-run: exit %d", dry.code)
	}
	r = relayctl(t, env, "rebuild", "--ids", ids[1], "--by", "alice", "--why", "stale row")
	if r.code != ExitOK || !strings.Contains(r.stdout, "restated 1 item(s)") {
		t.Fatalf("rebuild --ids: exit %d", r.code)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE origin = 'rebuild' AND aggregate_id = $1 AND aggregate_version = 2
		AND event_type = 'test.item.updated' AND topic = 'items.events'`, ids[1]); n != 1 {
		t.Fatalf("restatements of %s at version 2: %d, want 1", ids[1], n)
	}
	if r := relayctl(t, env, "rebuild", "--ids", "42", "--dry-run"); r.code != ExitUsage || !strings.Contains(r.stderr, `"42" is not an item id`) {
		t.Fatalf("rebuild --ids 42: exit %d, stderr %q; want the Rebuilder's refusal", r.code, r.stderr)
	}
	// --topic sends every restatement there, whatever topic the event carries.
	r = relayctl(t, env, "rebuild", "--ids", ids[0], "--topic", "items.replay", "--by", "alice", "--why", "to another topic")
	if r.code != ExitOK || !strings.Contains(r.stdout, "restated 1 item(s)") {
		t.Fatalf("rebuild --topic: exit %d, stderr %q", r.code, r.stderr)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE origin = 'rebuild' AND aggregate_id = $1 AND topic = 'items.replay'`, ids[0]); n != 1 {
		t.Fatalf("restatements of %s on items.replay: %d, want 1", ids[0], n)
	}
	if r := relayctl(t, env, "rebuild", "--topic", "goog.x", "--dry-run"); r.code != ExitUsage || !strings.Contains(r.stderr, "--topic: topic id") {
		t.Fatalf("rebuild --topic goog.x: exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}
