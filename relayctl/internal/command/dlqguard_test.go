package command

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
)

// TestDLQCommandsRefuseALiveSubscription: dlq list, show, replay and purge
// refuse a subscription that is not a dead-letter one (a projection's
// source, declared or carrying a dead-letter policy; a tap on the events
// topic), with or without -f, and the live message stays; with
// --allow-live-subscription the command runs and the audit row says so.
func TestDLQCommandsRefuseALiveSubscription(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	live := newPoison(t, "", true)
	publish(t, ps, "items.events", &pubsub.Message{Data: live.body, Attributes: map[string]string{"event_id": live.eventID}})
	for _, sub := range []string{"items.view", auditTap} {
		for _, args := range [][]string{
			{"dlq", "purge", "--subscription", sub, "--ids", live.eventID, "--by", "bob", "--why", "typo", "-f", pubsubConfig},
			{"dlq", "purge", "--subscription", sub, "--ids", live.eventID, "--by", "bob", "--why", "typo"},
			{"dlq", "replay", "--subscription", sub, "--all", "--by", "bob", "--why", "typo", "-f", pubsubConfig},
			{"dlq", "list", "--subscription", sub, "-f", pubsubConfig},
			{"dlq", "show", "--subscription", sub},
		} {
			r := relayctl(t, env, args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, "not a dead-letter subscription") {
				t.Errorf("relayctl %s: exit %d, stderr %q; want %d naming it not a dead-letter subscription", strings.Join(args, " "), r.code, r.stderr, ExitUsage)
			}
		}
	}
	if m := pullOne(t, ps, auditTap); string(m.GetData()) != string(live.body) {
		t.Errorf("the live message on %s changed", auditTap)
	}
	// The override, audited.
	r := relayctl(t, env, "dlq", "list", "--subscription", "items.view", "-f", pubsubConfig, "--allow-live-subscription")
	if r.code != ExitProblem || !strings.Contains(r.stderr, "live subscription") {
		t.Errorf("dlq list --allow-live-subscription: exit %d, stderr %q; want 1 (one message) and a warning", r.code, r.stderr)
	}
	r = relayctl(t, env, "dlq", "purge", "--subscription", "items.view", "--ids", live.eventID, "--by", "bob", "--why", "INC-3 stuck poison", "-f", pubsubConfig, "--allow-live-subscription")
	if r.code != ExitOK {
		t.Fatalf("dlq purge --allow-live-subscription: exit %d %s", r.code, r.stderr)
	}
	if d := lastAudit(t, db, "dlq purge"); d["live_subscription"] != true {
		t.Errorf("the override is not in the audit row: %v", d)
	}
}

// TestConsoleDeadLetterViewReadsOnlyDeadLetterSubscriptions: the console
// refuses to show, replay or purge a live subscription; purge and seek
// show a preview first and act only on its confirmation.
func TestConsoleDeadLetterViewReadsOnlyDeadLetterSubscriptions(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	live := newPoison(t, "", true)
	publish(t, ps, "items.events", &pubsub.Message{Data: live.body, Attributes: map[string]string{"event_id": live.eventID}})
	p := newPoison(t, "mapping_error", true)
	publish(t, ps, "items.events.dlq-view", &pubsub.Message{Data: p.body, Attributes: p.attrs})
	c := newConsole(t, env, true, pubsubConfig)
	for _, path := range []string{"/dlq/peek", "/dlq/purge", "/dlq/replay"} {
		code, body := c.post(path, url.Values{"subscription": {"items.view"}, "ids": {live.eventID}, "why": {"typo"}, "confirm": {"1"}})
		if code != http.StatusBadRequest || !strings.Contains(body, "not a dead-letter subscription") {
			t.Errorf("POST %s on items.view: %d, want 400 naming it not a dead-letter subscription:\n%s", path, code, body)
		}
	}
	if m := pullOne(t, ps, auditTap); string(m.GetData()) != string(live.body) {
		t.Errorf("the live message changed")
	}
	// Purge: the first POST previews, changes nothing and is not audited.
	before := lastAuditID(t, db)
	code, body := c.post("/dlq/purge", url.Values{"subscription": {"items.events.dlq-view"}, "ids": {p.eventID}, "why": {"INC-4"}})
	if code != http.StatusOK || !strings.Contains(body, "dry run: 1 message(s) would be acked") || !strings.Contains(body, `id="confirm-purge"`) {
		t.Errorf("purge preview: %d\n%s", code, body)
	}
	if n := dlqCount(t, env, []string{"--subscription", "items.events.dlq-view"}); n != 1 {
		t.Errorf("dead letters after the purge preview: %d, want 1", n)
	}
	if lastAuditID(t, db) != before {
		t.Errorf("the purge preview wrote an audit row")
	}
	if code, body := c.post("/dlq/purge", url.Values{"subscription": {"items.events.dlq-view"}, "ids": {p.eventID}, "why": {"INC-4"}, "confirm": {"1"}}); code != http.StatusSeeOther {
		t.Errorf("purge confirmation: %d %s", code, body)
	}
	if n := dlqCount(t, env, []string{"--subscription", "items.events.dlq-view"}); n != 0 {
		t.Errorf("dead letters after the confirmed purge: %d, want 0", n)
	}
	// Seek: the first POST previews.
	before = lastAuditID(t, db)
	code, body = c.post("/seek", url.Values{"subscription": {"items.view"}, "time": {"1m"}, "why": {"INC-5"}})
	if code != http.StatusOK || !strings.Contains(body, "will be delivered again") || !strings.Contains(body, `id="confirm-seek"`) {
		t.Errorf("seek preview: %d\n%s", code, body)
	}
	if lastAuditID(t, db) != before {
		t.Errorf("the seek preview wrote an audit row")
	}
	if code, body := c.post("/seek", url.Values{"subscription": {"items.view"}, "time": {"1m"}, "why": {"INC-5"}, "confirm": {"1"}}); code != http.StatusSeeOther {
		t.Errorf("seek confirmation: %d %s", code, body)
	}
	if lastAuditID(t, db) == before {
		t.Errorf("the confirmed seek wrote no audit row")
	}
}
