package command

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestFailedListAndReplay(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	rows := seedOutbox(t, db, 6)
	// rows 0-2 failed with payload_invalid, row 3 failed with topic_not_found,
	// row 4 published, row 5 pending.
	for i, reason := range []string{"payload_invalid", "payload_invalid", "payload_invalid", "topic_not_found"} {
		exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), attempts = 3, locked_by = 'w1',
			error_reason = $2, last_error = 'boom ' || $2,
			error_history = jsonb_build_array(jsonb_build_object('at', now(), 'reason', $2, 'error', 'boom', 'attempt', 3, 'worker', 'w1'))
			WHERE id = $1`, rows[i].ID, reason)
	}
	exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now(), message_id = 'm4' WHERE id = $1`, rows[4].ID)

	// failed list: filters, JSON, exit 1 when rows match.
	r := relayctl(t, env, "failed", "list", "--reason", "payload_invalid", "--json")
	var listed []outboxRow
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || r.code != ExitProblem || len(listed) != 3 {
		t.Fatalf("failed list --reason payload_invalid: exit %d, %d rows, err %v", r.code, len(listed), err)
	}
	if listed[0].Attempts != 3 || listed[0].LastError != "boom payload_invalid" || !strings.Contains(string(listed[0].ErrorHistory), `"worker": "w1"`) {
		t.Fatalf("failed list row lacks attempts/last error/history: %+v", listed[0])
	}
	r = relayctl(t, env, "failed", "list", "--aggregate", rows[3].AggregateID, "--history")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "topic_not_found") || !strings.Contains(r.stdout, "error history, 1 entr") {
		t.Fatalf("failed list --aggregate --history: exit %d", r.code)
	}
	if r = relayctl(t, env, "failed", "list", "--reason", "mapping_error"); r.code != ExitOK {
		t.Fatalf("failed list with no match: exit %d, want 0", r.code)
	}
	if r = relayctl(t, env, "failed", "list", "--since", "yesterday"); r.code != ExitUsage || !strings.Contains(r.stderr, "--since") {
		t.Fatalf("bad --since: exit %d, stderr %q", r.code, r.stderr)
	}

	// Refusals: no --by/--why, no filter. Nothing changes.
	for _, args := range [][]string{
		{"replay", "--reason", "payload_invalid"},
		{"replay", "--reason", "payload_invalid", "--by", "alice"},
		{"replay", "--reason", "payload_invalid", "--why", "INC-1"},
		{"replay", "--by", "alice", "--why", "INC-1"},
	} {
		r = relayctl(t, env, args...)
		if r.code != ExitUsage {
			t.Fatalf("%v: exit %d, want %d", args, r.code, ExitUsage)
		}
	}
	r = relayctl(t, env, "replay", "--reason", "payload_invalid")
	if !strings.Contains(r.stderr, "--by and --why are required") {
		t.Fatalf("refusal message unclear: %q", r.stderr)
	}

	// Dry run lists exactly the rows, changes nothing.
	before := snapshotOutbox(t, db)
	r = relayctl(t, env, "replay", "--reason", "payload_invalid", "--dry-run")
	if r.code != ExitOK || !strings.Contains(r.stdout, "dry run: 3 row(s)") {
		t.Fatalf("dry run: exit %d, stdout %q", r.code, r.stdout)
	}
	for i := 0; i < 3; i++ {
		if !strings.Contains(r.stdout, rows[i].EventID.String()) {
			t.Fatalf("dry run does not list row %d", rows[i].ID)
		}
	}
	if strings.Contains(r.stdout, rows[3].EventID.String()) {
		t.Fatalf("dry run lists a row the filter excludes")
	}
	if after := snapshotOutbox(t, db); after != before {
		t.Fatalf("dry run changed the outbox:\nbefore %s\nafter  %s", before, after)
	}
	if n := count(t, db, "SELECT count(*) FROM outbox_replays"); n != 0 {
		t.Fatalf("dry run wrote %d audit rows", n)
	}

	// Real run, throttled into batches of 1: exactly those rows, one audit row.
	r = relayctl(t, env, "replay", "--reason", "payload_invalid", "--by", "alice", "--why", "INC-42 schema fixed", "--rate", "50", "--batch", "1")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 3 row(s)") {
		t.Fatalf("replay: exit %d, stdout %q", r.code, r.stdout)
	}
	for i, want := range []string{"pending/0/1", "pending/0/1", "pending/0/1", "failed/3/0", "published/0/0", "pending/0/0"} {
		got := rowState(t, db, rows[i].ID)
		if got != want {
			t.Errorf("row %d: status/attempts/replay_count = %s, want %s", i, got, want)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE id = ANY($1) AND locked_by IS NULL AND next_attempt_at <= now()
		AND jsonb_array_length(error_history) = 1 AND failed_at IS NULL`, []int64{rows[0].ID, rows[1].ID, rows[2].ID}); n != 3 {
		t.Fatalf("replayed rows: %d of 3 have claim cleared, history kept, due now", n)
	}
	var by, why, from string
	var rowCount, ids int
	var filter []byte
	if err := db.Pool.QueryRow(t.Context(), `SELECT requested_by, reason, from_status, row_count, cardinality(event_ids), filter FROM outbox_replays`).
		Scan(&by, &why, &from, &rowCount, &ids, &filter); err != nil {
		t.Fatalf("reading the one audit row: %v", err)
	}
	if by != "alice" || why != "INC-42 schema fixed" || from != "failed" || rowCount != 3 || ids != 3 || !strings.Contains(string(filter), `"reason": "payload_invalid"`) {
		t.Fatalf("audit row: by %q why %q from %q rows %d ids %d filter %s", by, why, from, rowCount, ids, filter)
	}

	// Published rows only with --include-published; by event id.
	r = relayctl(t, env, "replay", "--ids", rows[4].EventID.String(), "--by", "bob", "--why", "re-drive")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 0 row(s)") || !strings.Contains(r.stderr, "did not match") {
		t.Fatalf("replay of a published row without the flag: exit %d", r.code)
	}
	r = relayctl(t, env, "replay", "--ids", fmt.Sprint(rows[4].ID), "--include-published", "--by", "bob", "--why", "re-drive", "--json")
	if r.code != ExitOK || rowState(t, db, rows[4].ID) != "pending/0/1" {
		t.Fatalf("replay --include-published: exit %d, row %s", r.code, rowState(t, db, rows[4].ID))
	}
	if n := count(t, db, "SELECT count(*) FROM outbox_replays"); n != 2 {
		t.Fatalf("audit rows after two effective replays: %d, want 2", n)
	}
}

func rowState(t *testing.T, db *testDB, id int64) string {
	t.Helper()
	var status string
	var attempts, replays int
	if err := db.Pool.QueryRow(t.Context(), "SELECT status, attempts, replay_count FROM outbox_events WHERE id = $1", id).Scan(&status, &attempts, &replays); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%d/%d", status, attempts, replays)
}

func snapshotOutbox(t *testing.T, db *testDB) string {
	t.Helper()
	var s string
	if err := db.Pool.QueryRow(t.Context(), "SELECT coalesce(string_agg(o::text, '|' ORDER BY id), '') FROM outbox_events o").Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayIncludesRowsTheLogModePublished: the log mode leaves the rows
// it published pending; --include-published selects those inserted below
// every slot's published horizon (outbox_log_slots), not a row inserted
// after it, nothing while a slot has no horizon yet, and the replayed
// rows are above the horizon again until the relay passes them.
func TestReplayIncludesRowsTheLogModePublished(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	published := seedOutbox(t, db, 2)
	exec(t, db, `INSERT INTO outbox_log_slots (slot_name, published_xmin)
		VALUES ('reader', txid_current() % 4294967296)`) // newer than the seeded rows' transaction, older than later ones
	later := seedOutbox(t, db, 1)

	dry := func() []outboxRow {
		t.Helper()
		r := relayctl(t, env, "replay", "--all", "--include-published", "--dry-run", "--json")
		var rows []outboxRow
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || r.code != ExitOK {
			t.Fatalf("replay --dry-run: exit %d, err %v, stdout %q", r.code, err, r.stdout)
		}
		return rows
	}
	rows := dry()
	if len(rows) != 2 || rows[0].ID != published[0].ID || rows[1].ID != published[1].ID {
		t.Fatalf("selected %+v, want the 2 rows below the horizon (ids %d, %d), not row %d", rows, published[0].ID, published[1].ID, later[0].ID)
	}
	exec(t, db, `INSERT INTO outbox_log_slots (slot_name) VALUES ('new-reader')`)
	if rows := dry(); len(rows) != 0 {
		t.Fatalf("selected %d rows while a slot has no horizon, want none", len(rows))
	}
	exec(t, db, `DELETE FROM outbox_log_slots WHERE slot_name = 'new-reader'`)

	r := relayctl(t, env, "replay", "--all", "--include-published", "--by", "alice", "--why", "rebuild the projection")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 2 row(s)") {
		t.Fatalf("replay: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for i, want := range []string{"pending/0/1", "pending/0/1"} {
		if got := rowState(t, db, published[i].ID); got != want {
			t.Errorf("row %d: %s, want %s", published[i].ID, got, want)
		}
	}
	if got := rowState(t, db, later[0].ID); got != "pending/0/0" {
		t.Errorf("row %d inserted after the horizon: %s, want pending/0/0", later[0].ID, got)
	}
	if rows := dry(); len(rows) != 0 {
		t.Fatalf("selected %d rows right after their replay, want none (above the horizon until the relay passes them)", len(rows))
	}
}
