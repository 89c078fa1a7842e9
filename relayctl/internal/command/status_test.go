package command

import (
	"encoding/json"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

func TestStatus(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})

	// Empty outbox, no Pub/Sub section: all quiet.
	r := relayctl(t, env, "status")
	if r.code != ExitOK || !strings.Contains(r.stdout, "OK: nothing needs attention") || !strings.Contains(r.stdout, "SUBSCRIPTIONS: skipped") {
		t.Fatalf("status on an empty outbox: exit %d", r.code)
	}

	rows := seedOutbox(t, db, 6) // 0 failed, 1 stuck, 2 retry scheduled, 3 published, 4-5 pending
	exec(t, db, `UPDATE outbox_events SET status = 'failed', failed_at = now(), error_reason = 'payload_invalid' WHERE id = $1`, rows[0].ID)
	dead := uuid.New()
	exec(t, db, `UPDATE outbox_events SET locked_by = 'w-dead', lock_token = $2, claimed_at = now() - interval '2 minutes' WHERE id = $1`, rows[1].ID, dead)
	exec(t, db, `INSERT INTO outbox_claims (lock_token, locked_by, claimed_at, lease_until, partitions, ids, held)
		VALUES ($1, 'w-dead', now() - interval '2 minutes', now() - interval '1 minute', '{0}', ARRAY[$2::bigint], 1)`, dead, rows[1].ID)
	exec(t, db, `UPDATE outbox_events SET attempts = 2, next_attempt_at = now() + interval '1 hour', error_reason = 'unavailable' WHERE id = $1`, rows[2].ID)
	exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now() WHERE id = $1`, rows[3].ID)
	for i, consumer := range []string{"item-projection", "item-projection", "item-search"} {
		exec(t, db, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, processed_at)
			VALUES ($1, $2, 'item', $3, 1, 'test.item.created', now())`, consumer, rows[i].EventID, rows[i].AggregateID)
	}
	if r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig); r.code != ExitOK {
		t.Fatalf("pubsub ensure: exit %d", r.code)
	}
	publish(t, ps, "items.events.dlq-search", &pubsub.Message{Data: []byte("x"), Attributes: map[string]string{"error_reason": "mapping_error", "event_id": uuid.NewString()}})

	r = relayctl(t, env, "status", "-f", pubsubConfig, "--json")
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != ExitProblem {
		t.Fatalf("status --json: exit %d, err %v", r.code, err)
	}
	o := rep.Outbox
	if o.ByStatus["pending"] != 3 || o.ByStatus["publishing"] != 1 || o.ByStatus["published"] != 1 || o.ByStatus["failed"] != 1 {
		t.Errorf("by status: %v", o.ByStatus)
	}
	if o.Lag != 4 || o.Ready != 2 || o.RetryScheduled != 1 || o.Inflight != 1 || o.Stuck != 1 || o.OldestAgeSeconds <= 0 {
		t.Errorf("health: lag %d ready %d retry %d inflight %d stuck %d oldest %.3fs", o.Lag, o.Ready, o.RetryScheduled, o.Inflight, o.Stuck, o.OldestAgeSeconds)
	}
	if o.FailedByReason["payload_invalid"] != 1 || len(o.StuckSamples) != 1 || o.StuckSamples[0].LockedBy != "w-dead" {
		t.Errorf("failed by reason %v, stuck samples %+v", o.FailedByReason, o.StuckSamples)
	}
	if len(rep.Inbox) != 2 || rep.Inbox[0].Consumer != "item-projection" || rep.Inbox[0].Events != 2 || rep.Inbox[1].Events != 1 {
		t.Errorf("inbox: %+v", rep.Inbox)
	}
	subs := map[string]subStatus{}
	for _, s := range rep.Subscriptions {
		subs[s.Name] = s
	}
	if s := subs["items.events.dlq-search"]; !s.IsDLQ || s.DeadLetters != 1 {
		t.Errorf("dlq-es: %+v, want 1 dead letter", s)
	}
	if s := subs["items.events.dlq-view"]; !s.IsDLQ || s.DeadLetters != 0 {
		t.Errorf("dlq-pg: %+v, want none", s)
	}
	if s := subs["items.view"]; !s.Exists || !s.Ordered || s.Backlog != "n/a" || !strings.Contains(s.DeadLetter, "items.events.dlq-view after 10") {
		t.Errorf("projection-pg: %+v", s)
	}
	if len(rep.Problems) != 3 {
		t.Errorf("problems: %q, want stuck, failed and dead letters", rep.Problems)
	}
	// One problem per line on stderr, not a Go slice run together.
	if want := "3 problem(s):\n  " + strings.Join(rep.Problems, "\n  ") + "\n"; !strings.HasSuffix(r.stderr, want) {
		t.Errorf("status stderr %q, want it to end with %q", r.stderr, want)
	}
	if s := subs["items.events.dlq-view"]; !strings.Contains(s.Backlog, "another reader holds are not seen") {
		t.Errorf("dlq-pg backlog %q: an empty peek must say what it cannot see", s.Backlog)
	}
	// Peeking did not consume the dead letter.
	if n := dlqCount(t, env, []string{"--subscription", "items.events.dlq-search"}); n != 1 {
		t.Fatalf("dead letters after status: %d, want 1", n)
	}
	r = relayctl(t, env, "status", "-f", pubsubConfig)
	if !strings.Contains(r.stdout, "PROBLEM: 1 stuck claim(s)") || !strings.Contains(r.stdout, "locked by w-dead") {
		t.Fatalf("status text lacks the stuck claim")
	}
}
