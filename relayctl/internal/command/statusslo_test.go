package command

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStatusNamesAnSLOBreachAndCountsOnlyHeadsAsReady: rows behind a
// failed head of their key are not "ready now", and an oldest unpublished
// row past --oldest-slo is a problem (exit 1) even with nothing failed.
func TestStatusNamesAnSLOBreachAndCountsOnlyHeadsAsReady(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	rows := seedOutbox(t, db, 3)
	// Two later versions behind row 0 (same topic and ordering key).
	exec(t, db, `INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type, schema_version,
			ordering_key, topic, headers, payload, occurred_at)
		SELECT gen_random_uuid(), aggregate_type, aggregate_id, aggregate_version + v, event_type, schema_version,
			ordering_key, topic, headers, payload, occurred_at
		FROM outbox_events, generate_series(1, 2) AS v WHERE id = $1`, rows[0].ID)

	// All pending and due, nothing failed, 10 minutes old: past a 1m SLO.
	exec(t, db, `UPDATE outbox_events SET created_at = now() - interval '10 minutes'`)
	r := relayctl(t, env, "status", "--oldest-slo", "1m", "--json")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v (stdout %q)", err, r.stdout)
	}
	if r.code != ExitProblem || !strings.Contains(strings.Join(rep.Problems, "\n"), "oldest unpublished row is 10m") {
		t.Errorf("status with the oldest row 10m old and --oldest-slo 1m: exit %d, problems %q; want exit %d naming the SLO breach", r.code, rep.Problems, ExitProblem)
	}
	if rep.Outbox.Ready != 3 {
		t.Errorf("ready now = %d with 3 keys all due, want 3 (the heads)", rep.Outbox.Ready)
	}

	// The head of the first key fails: its two later rows are not ready.
	exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), error_reason = 'payload_invalid' WHERE id = $1`, rows[0].ID)
	r = relayctl(t, env, "status", "--json")
	rep = statusReport{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: %v", err)
	}
	if rep.Outbox.Ready != 2 || rep.Outbox.BehindFailed != 2 {
		t.Errorf("ready now = %d, behind a failed head = %d; want 2 and 2", rep.Outbox.Ready, rep.Outbox.BehindFailed)
	}
}

// TestStatusRefusesAnInvalidDurationInTheEnvironment: a duration variable
// status reads that does not parse is a usage error naming it, not its
// default taken silently.
func TestStatusRefusesAnInvalidDurationInTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"OUTBOX_OLDEST_SLO", "OUTBOX_MAX_PROCESSING_SECONDS"} {
		r := relayctl(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none", name: "5 min"}, "status")
		if r.code != ExitUsage || !strings.Contains(r.stderr, name) {
			t.Errorf("status with %s=\"5 min\": exit %d, stderr %q; want exit %d naming %s", name, r.code, r.stderr, ExitUsage, name)
		}
	}
}
