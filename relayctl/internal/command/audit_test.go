package command

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// TestMutatingCommandsAuditWhoWhyFilterOutcome: a failed seek
// is recorded with its failure, a successful one with "ok"; snapshot
// create/delete need --by/--why; a replay records the absolute window it
// used, not "15m".
func TestMutatingCommandsAuditWhoWhyFilterOutcome(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})
	if r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig); r.code != ExitOK {
		t.Fatalf("pubsub ensure: exit %d", r.code)
	}
	outcome := func(command string) []string {
		t.Helper()
		rows, err := db.Pool.Query(context.Background(), `SELECT requested_by || '|' || reason || '|' || coalesce(details->>'outcome', '<none>')
			FROM admin_audit WHERE command = $1 ORDER BY id`, command)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}

	// pstest has no snapshots: the seek fails after its audit row was written.
	r := relayctl(t, env, "seek", "--subscription", "items.view", "--snapshot", "nosuch", "--by", "alice", "--why", "INC-1")
	if r.code != ExitRuntime {
		t.Fatalf("seek to a missing snapshot: exit %d, want %d", r.code, ExitRuntime)
	}
	r = relayctl(t, env, "seek", "--subscription", "items.view", "--time", "1m", "--by", "bob", "--why", "INC-2")
	if r.code != ExitOK {
		t.Fatalf("seek to a time: exit %d", r.code)
	}
	got := outcome("seek")
	if len(got) != 2 || !strings.HasPrefix(got[0], "alice|INC-1|failed: ") || got[1] != "bob|INC-2|ok" {
		t.Errorf("seek audit rows (by|why|outcome): %q, want a failed one by alice and an ok one by bob", got)
	}

	for _, args := range [][]string{
		{"snapshot", "create", "--subscription", "items.view", "--name", "before-deploy"},
		{"snapshot", "delete", "--name", "before-deploy"},
	} {
		if r := relayctl(t, env, args...); r.code != ExitUsage || !strings.Contains(r.stderr, "--by and --why are required") {
			t.Errorf("%q without --by/--why: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r = relayctl(t, env, "snapshot", "delete", "--name", "before-deploy", "--by", "carol", "--why", "INC-3")
	if got := outcome("snapshot delete"); r.code != ExitRuntime || len(got) != 1 || !strings.HasPrefix(got[0], "carol|INC-3|failed: ") {
		t.Errorf("snapshot delete on pstest: exit %d, audit %q", r.code, got)
	}

	// Replay: the window is recorded as absolute times.
	rows := seedOutbox(t, db, 1)
	exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), error_reason = 'payload_invalid' WHERE id = $1`, rows[0].ID)
	before := time.Now()
	if r := relayctl(t, env, "replay", "--since", "15m", "--by", "dave", "--why", "INC-4"); r.code != ExitOK {
		t.Fatalf("replay --since 15m: exit %d", r.code)
	}
	var since string
	if err := db.Pool.QueryRow(context.Background(), `SELECT filter->>'since' FROM outbox_replays WHERE requested_by = 'dave'`).Scan(&since); err != nil {
		t.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, since)
	if err != nil {
		t.Fatalf("recorded since %q is not an absolute time: %v", since, err)
	}
	if want := before.Add(-15 * time.Minute); at.Before(want.Add(-time.Minute)) || at.After(time.Now().Add(-15*time.Minute)) {
		t.Errorf("recorded since %s, want 15 minutes before the run (%s)", at, want)
	}
}
