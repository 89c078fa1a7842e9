package command

import (
	"encoding/json"
	"testing"
	"time"
)

// TestStatusAnswersPromptlyOverABacklog: status over 30,000 pending rows on
// 1,000 keys answers in seconds with the right counts (a lookup of each
// row's earlier rows of its key would take minutes).
func TestStatusAnswersPromptlyOverABacklog(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	env := map[string]string{"DATABASE_URL": db.URL}
	exec(t, db, `INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type, ordering_key, topic, payload, occurred_at)
		SELECT gen_random_uuid(), 'item', 'i' || (g % 1000), g / 1000 + 1, 'item.updated', 'i' || (g % 1000), 'items.events', '\x00', now()
		FROM generate_series(0, 29999) AS g`)
	exec(t, db, `ANALYZE outbox_events`)
	start := time.Now()
	r := relayctl(t, env, "status", "--json", "--oldest-slo", "0s")
	took := time.Since(start)
	var rep statusReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("status --json: exit %d, %v (stderr %q)", r.code, err, r.stderr)
	}
	if rep.Outbox.Lag != 30000 || rep.Outbox.Ready != 1000 {
		t.Errorf("lag %d, ready now %d; want 30000 and 1000 (the heads of the keys)", rep.Outbox.Lag, rep.Outbox.Ready)
	}
	if took > 15*time.Second {
		t.Errorf("status over 30,000 pending rows took %s, want seconds", took.Round(time.Millisecond))
	}
}
