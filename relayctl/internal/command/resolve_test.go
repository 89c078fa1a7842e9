package command

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// failed resolve closes a failed row for good: audited, previewed exactly
// by --dry-run, refused for rows that are not failed, gone from status's
// problems, no longer holding back its aggregate, and skipped by replay
// unless --include-resolved.
func TestFailedResolve(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	rows := seedOutbox(t, db, 3)
	failed, published, behind := rows[0], rows[1], rows[2]
	exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), attempts = 1,
		error_reason = 'payload_invalid', last_error = 'test producer garbage' WHERE id = $1`, failed.ID)
	exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now(), message_id = 'm1' WHERE id = $1`, published.ID)
	// The next version of the failed row's aggregate waits behind it.
	exec(t, db, `UPDATE outbox_events o SET aggregate_id = f.aggregate_id, ordering_key = f.ordering_key, aggregate_version = 2
		FROM outbox_events f WHERE f.id = $1 AND o.id = $2`, failed.ID, behind.ID)
	partitions, err := outboxdb.New(db.Pool).ListOutboxPartitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var all []int32 // a claim of one replica owning every partition
	for _, p := range partitions {
		all = append(all, p.Partition)
	}
	claim := func() []int64 {
		t.Helper()
		got, err := outboxdb.New(db.Pool).ClaimOutboxEvents(context.Background(), outboxdb.ClaimOutboxEventsParams{
			WorkerID: "test", LockToken: uuid.New(), LeaseSeconds: 30, BatchSize: 10, Partitions: all,
		})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("claimed %v behind a failed head", got)
	}
	if r := relayctl(t, env, "status"); r.code != ExitProblem || !strings.Contains(r.stderr, "failed") {
		t.Fatalf("status with a failed row: exit %d", r.code)
	}

	// Refusals change nothing and name what is wrong.
	for _, c := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"failed", "resolve", "--by", "alice", "--why", "INC-9"}, ExitUsage, []string{"--ids is required"}},
		{[]string{"failed", "resolve", "--ids", fmt.Sprint(failed.ID)}, ExitUsage, []string{"--by and --why are required"}},
		{[]string{"failed", "resolve", "--ids", fmt.Sprint(failed.ID), "--by", "alice", "--why", " "}, ExitUsage, []string{"--why is required"}},
		{[]string{"failed", "resolve", "--ids", fmt.Sprintf("%d,%d,%s,99999999", failed.ID, published.ID, behind.EventID), "--by", "alice", "--why", "INC-9"}, ExitProblem, []string{
			"nothing changed",
			fmt.Sprintf("row %d (event %s) is published, not failed", published.ID, published.EventID),
			fmt.Sprintf("row %d (event %s) is pending, not failed", behind.ID, behind.EventID),
			"99999999: no such outbox row",
		}},
	} {
		r := relayctl(t, env, c.args...)
		if r.code != c.code {
			t.Fatalf("%v: exit %d, want %d", c.args, r.code, c.code)
		}
		for _, w := range c.want {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%v: stderr lacks %q: %s", c.args, w, r.stderr)
			}
		}
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'resolved'`) + count(t, db, `SELECT count(*) FROM admin_audit`); n != 0 {
		t.Fatalf("a refused resolve changed %d rows", n)
	}

	// --dry-run prints the plan the real run prints, and changes nothing.
	dry := relayctl(t, env, "failed", "resolve", "--ids", failed.EventID.String(), "--dry-run")
	plan, ok := strings.CutSuffix(dry.stdout, "dry run: nothing changed\n")
	if dry.code != ExitOK || !ok || !strings.Contains(plan, "1 failed row(s) -> resolved") || !strings.Contains(plan, "1 pending row(s) of their aggregates") {
		t.Fatalf("dry run: exit %d, stdout %q", dry.code, dry.stdout)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed'`); n != 1 {
		t.Fatalf("dry run changed the row: %d failed", n)
	}
	r := relayctl(t, env, "failed", "resolve", "--ids", failed.EventID.String(), "--by", "alice", "--why", "INC-9 test producer garbage")
	if r.code != ExitOK || !strings.HasPrefix(r.stdout, plan) || !strings.Contains(r.stdout, "resolved 1 row(s); audit row admin_audit.id=") {
		t.Fatalf("resolve: exit %d, stdout %q, want it to start with the dry run's plan %q", r.code, r.stdout, plan)
	}

	// The row: resolved, its error kept, pointing at its audit row.
	var status, reason, command, by, why string
	var details []byte
	var resolvedAt bool
	err = db.Pool.QueryRow(context.Background(), `SELECT o.status, o.error_reason, o.resolved_at IS NOT NULL, a.command, a.requested_by, a.reason, a.details
		FROM outbox_events o JOIN admin_audit a ON a.id = o.resolve_audit_id WHERE o.id = $1`, failed.ID).
		Scan(&status, &reason, &resolvedAt, &command, &by, &why, &details)
	if err != nil {
		t.Fatalf("resolved row and its audit row: %v", err)
	}
	var d struct {
		RowIDs   []int64  `json:"row_ids"`
		EventIDs []string `json:"event_ids"`
		Outcome  string   `json:"outcome"`
	}
	if err := json.Unmarshal(details, &d); err != nil {
		t.Fatal(err)
	}
	if status != "resolved" || reason != "payload_invalid" || !resolvedAt || command != "failed resolve" || by != "alice" ||
		why != "INC-9 test producer garbage" || len(d.RowIDs) != 1 || d.RowIDs[0] != failed.ID ||
		len(d.EventIDs) != 1 || d.EventIDs[0] != failed.EventID.String() || d.Outcome != "ok" {
		t.Fatalf("row %s/%s/%v, audit %s by %s why %q details %s", status, reason, resolvedAt, command, by, why, details)
	}

	// status is clean again and counts the row as resolved.
	r = relayctl(t, env, "status")
	if r.code != ExitOK || !strings.Contains(r.stdout, "resolved") {
		t.Fatalf("status after resolve: exit %d, stdout %q", r.code, r.stdout)
	}
	if r = relayctl(t, env, "failed", "list"); r.code != ExitOK {
		t.Fatalf("failed list after resolve: exit %d", r.code)
	}
	// Resolving it again is refused: it is no longer failed.
	r = relayctl(t, env, "failed", "resolve", "--ids", fmt.Sprint(failed.ID), "--by", "alice", "--why", "again")
	if r.code != ExitProblem || !strings.Contains(r.stderr, "is resolved, not failed") {
		t.Fatalf("second resolve: exit %d, stderr %q", r.code, r.stderr)
	}
	// Its aggregate flows again.
	if got := claim(); len(got) != 1 || got[0] != behind.ID {
		t.Fatalf("claim after resolve = %v, want the row behind it (%d)", got, behind.ID)
	}

	// replay skips resolved rows unless asked.
	r = relayctl(t, env, "replay", "--ids", fmt.Sprint(failed.ID), "--by", "alice", "--why", "INC-9")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 0 row(s)") || !strings.Contains(r.stderr, "--include-resolved") {
		t.Fatalf("replay of a resolved row without --include-resolved: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = relayctl(t, env, "replay", "--ids", fmt.Sprint(failed.ID), "--include-resolved", "--by", "alice", "--why", "INC-9 sent after all")
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 1 row(s)") {
		t.Fatalf("replay --include-resolved: exit %d, stdout %q", r.code, r.stdout)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE id = $1 AND status = 'pending' AND resolved_at IS NULL AND resolve_audit_id IS NULL`, failed.ID); n != 1 {
		t.Fatal("replayed resolved row is not pending with its resolution cleared")
	}
}
