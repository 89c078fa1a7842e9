package command

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleRebuildProjection: the console's rebuild of one projection
// previews the dry run's counts and changes nothing until confirmed; the
// confirmation empties the projection's tables and inbox rows and replays
// the published outbox, leaving the audit rows `relayctl rebuild
// --projection` leaves; an undeclared projection is refused.
func TestConsoleRebuildProjection(t *testing.T) {
	t.Parallel()
	_, db, env := ensured(t)
	c := newConsole(t, env, true, pubsubConfig)
	const by, why = "alice@example.com", "INC-7 corrupted view"
	written := seedOutbox(t, db, 3)
	seed := func() {
		exec(t, db, `UPDATE outbox_events SET status = 'published', published_at = now(), attempts = 1`)
		exec(t, db, `DELETE FROM item_view; DELETE FROM inbox_events`)
		for _, w := range written[:2] {
			exec(t, db, `INSERT INTO item_view VALUES ($1, 'stale', 1, NULL)`, w.AggregateID)
			exec(t, db, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type)
				VALUES ('item-view', $1, 'items.item', $2, 1, 'seeded'), ('other-view', $1, 'items.item', $2, 1, 'seeded')`, w.EventID, w.AggregateID)
		}
	}
	seed()

	if code, page := c.do(http.MethodGet, "/replays", nil); code != http.StatusOK || !strings.Contains(page, `<option value="item-view">item-view (item_view)</option>`) {
		t.Fatalf("GET /replays: %d, want the rebuild form offering item-view\n%s", code, page)
	}
	before := lastAuditID(t, db)
	code, page := c.post("/rebuild", url.Values{"projection": {"item-view"}, "why": {why}})
	for _, want := range []string{"item_view (2 rows)", "delete 2 inbox row(s) of consumer item-view", "replay 3 published outbox row(s)", `name="confirm"`, `id="confirm-rebuild"`} {
		if code != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("rebuild preview: %d, want %q in\n%s", code, want, page)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM item_view`) + count(t, db, `SELECT count(*) FROM inbox_events`); n != 6 || lastAuditID(t, db) != before ||
		count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'published'`) != 3 {
		t.Fatalf("the preview changed something: %d view and inbox rows (want 6), audit %v -> %v", n, before, lastAuditID(t, db))
	}
	if strings.Contains(page, "no longer in the outbox") {
		t.Errorf("rebuild preview with every applied event in the outbox says some are gone:\n%s", page)
	}
	// An event the projection applied that retention deleted from the
	// outbox: the plan says it will not come back.
	exec(t, db, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type)
		VALUES ('item-view', gen_random_uuid(), 'items.item', 'gone', 1, 'seeded')`)
	if r := relayctl(t, env, "rebuild", "--projection", "item-view", "--dry-run"); r.code != ExitOK ||
		!strings.Contains(r.stdout, "1 event(s) the projection applied are no longer in the outbox") {
		t.Errorf("rebuild --dry-run with an applied event retention deleted: exit %d, want 0 and the plan saying 1 event is gone", r.code)
	}
	exec(t, db, `DELETE FROM inbox_events WHERE aggregate_id = 'gone'`)
	if code, page := c.post("/rebuild", url.Values{"projection": {"items"}, "why": {why}, "confirm": {"1"}}); code != http.StatusBadRequest || !strings.Contains(page, "not a projection of this service (item-view)") {
		t.Errorf("rebuild of an undeclared projection: %d, want 400 naming the declared ones\n%s", code, page)
	}

	// The CLI's run, then the console's confirmation on the same state:
	// the same audit rows.
	if r := relayctl(t, env, "rebuild", "--projection", "item-view", "--by", by, "--why", why); r.code != ExitOK {
		t.Fatalf("relayctl rebuild --projection: %d", r.code)
	}
	fromCLI := auditRows(t, db, before)
	seed()
	before = lastAuditID(t, db)
	if code, body := c.post("/rebuild", url.Values{"projection": {"item-view"}, "why": {why}, "confirm": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("console rebuild: %d %s", code, body)
	}
	fromConsole := auditRows(t, db, before)
	if len(fromCLI) == 0 || strings.Join(fromCLI, "\n") != strings.Join(fromConsole, "\n") {
		t.Errorf("rebuild: audit differs\nCLI:     %q\nconsole: %q", fromCLI, fromConsole)
	}
	if n := count(t, db, `SELECT count(*) FROM item_view`); n != 0 {
		t.Errorf("item_view rows after the rebuild: %d, want 0", n)
	}
	if n := count(t, db, `SELECT count(*) FROM inbox_events WHERE consumer = 'item-view'`); n != 0 {
		t.Errorf("inbox rows of item-view after the rebuild: %d, want 0", n)
	}
	if n := count(t, db, `SELECT count(*) FROM inbox_events WHERE consumer = 'other-view'`); n != 2 {
		t.Errorf("inbox rows of another consumer after the rebuild: %d, want 2", n)
	}
	if n := count(t, db, `SELECT count(*) FROM outbox_events WHERE status = 'pending'`); n != 3 {
		t.Errorf("outbox rows replayed to pending: %d, want 3", n)
	}
}
