package command

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// failWithCauses fails n seeded rows as reason, their error_history the
// given causes (the last one is the cause), as the relay leaves them.
func failWithCauses(t *testing.T, db *testDB, n int, reason string, causes ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, w := range seedOutbox(t, db, n) {
		exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), attempts = cardinality($3::text[]),
			error_reason = $2, last_error = 'boom',
			error_history = (SELECT jsonb_agg(jsonb_build_object('at', now(), 'reason', c, 'error', 'boom', 'attempt', i, 'worker', 'w1')
			                 ORDER BY i) FROM unnest($3::text[]) WITH ORDINALITY AS h(c, i))
			WHERE id = $1`, w.ID, reason, causes)
		ids = append(ids, w.ID)
	}
	return ids
}

// TestRedriveFollowsTheCause: the policy selects failed rows by the cause
// of their last error, not by their final reason: rows failed as
// max_attempts_exceeded after timeouts (as relays left them before
// outages held the topic) come back once the topic answers, audited as
// the policy's; rows whose last error was the event's own fault, or a
// cause the policy does not list, stay failed. max_attempts_exceeded and
// deterministic reasons are refused as policy reasons.
func TestRedriveFollowsTheCause(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	timedOut := failWithCauses(t, db, 3, "max_attempts_exceeded", "unavailable", "timeout", "timeout")
	poisoned := failWithCauses(t, db, 2, "max_attempts_exceeded", "timeout", "payload_invalid")
	unlisted := failWithCauses(t, db, 1, "max_attempts_exceeded", "unknown")
	invalid := failWithCauses(t, db, 1, "payload_invalid", "payload_invalid")
	env := failWithCauses(t, db, 2, "topic_not_found", "topic_not_found")

	for reason, why := range map[string]string{"max_attempts_exceeded": "not a cause", "payload_invalid": "deterministic"} {
		err := (&RedrivePolicy{Reasons: []string{reason}}).validate()
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("policy for %s: %v, want refused as %s", reason, err, why)
		}
	}
	policy := RedrivePolicy{Reasons: []string{"unavailable", "timeout", "server_error", "rate_limited", "topic_not_found"}, Rate: 100, Every: time.Second}
	if err := policy.validate(); err != nil {
		t.Fatal(err)
	}
	pool, err := (&dbFlags{url: db.URL, schema: testSchema, cli: &cli{connectTimeout: 5 * time.Second}}).open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var answers atomic.Bool
	r := &redriver{policy: policy, pool: pool, cli: &cli{connectTimeout: time.Second},
		healthy: func(context.Context, string) bool { return answers.Load() }}

	if n, err := r.tick(t.Context()); err != nil || n != 0 {
		t.Fatalf("tick while the topic does not answer: moved %d, err %v; want 0", n, err)
	}
	answers.Store(true)
	if n, err := r.tick(t.Context()); err != nil || n != len(timedOut)+len(env) {
		t.Fatalf("tick once the topic answers: moved %d, err %v; want %d", n, err, len(timedOut)+len(env))
	}
	back := append(append([]int64{}, timedOut...), env...)
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'pending' AND replay_count = 1 AND id = ANY($1)`, back); n != len(back) {
		t.Errorf("rows failed for the environment pending again: %d, want %d", n, len(back))
	}
	stay := append(append(append([]int64{}, poisoned...), unlisted...), invalid...)
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'failed' AND id = ANY($1)`, stay); n != len(stay) {
		t.Errorf("rows whose cause is the event's or not listed still failed: %d, want %d", n, len(stay))
	}
	if n := count(t, db, `SELECT coalesce(sum(row_count), 0)::int FROM outbox_replays WHERE requested_by = $1 AND filter->>'cause' = 'timeout'`, RedriveBy); n != len(timedOut) {
		t.Errorf("rows audited as re-driven for cause timeout: %d, want %d", n, len(timedOut))
	}
	s, err := lastRedrives(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Reasons, ",") != "timeout,topic_not_found" || s.Rows != int64(len(back)) {
		t.Errorf("status summary = %+v, want causes timeout,topic_not_found and %d rows", s, len(back))
	}
}
