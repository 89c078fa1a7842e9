package command

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// poison is a dead letter in the projector's format: the original body and
// attributes plus error_reason, error, projection, delivery_attempt,
// original_message_id, dead_lettered_at.
type poison struct {
	body    []byte
	attrs   map[string]string
	eventID string
	aggID   string
}

func newPoison(t *testing.T, reason string, valid bool) poison {
	t.Helper()
	agg := uuid.NewString()
	eventID := uuid.NewString()
	body := []byte("\xff\x00 not a protobuf")
	if valid {
		var err error
		body, err = testevent.Encode(outbox.Metadata{
			EventID: uuid.MustParse(eventID), EventType: testevent.TypeUpdated, AggregateType: testevent.AggregateType,
			AggregateID: agg, AggregateVersion: 2, SchemaVersion: 1, OccurredAt: time.Now(),
		}, testevent.Payload(agg, 2, "poison", ""))
		if err != nil {
			t.Fatal(err)
		}
	}
	return poison{body: body, eventID: eventID, aggID: agg, attrs: map[string]string{
		"event_id": eventID, "event_type": testevent.TypeUpdated, "aggregate_type": testevent.AggregateType,
		"aggregate_id": agg, "version": "2", "schema_version": "1", "occurred_at": time.Now().UTC().Format(time.RFC3339Nano),
		"traceparent":  "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"error_reason": reason, "error": "projection item_view: " + reason, "projection": "item_view",
		"delivery_attempt": "3", "original_message_id": "orig-" + eventID[:8], "dead_lettered_at": time.Now().UTC().Format(time.RFC3339Nano),
	}}
}

func publish(t *testing.T, ps *gpubsubtest.Server, topic string, msgs ...*pubsub.Message) {
	t.Helper()
	p := ps.Client.Publisher(topic)
	defer p.Stop()
	for _, m := range msgs {
		if _, err := p.Publish(t.Context(), m).Get(t.Context()); err != nil {
			t.Fatalf("publishing to %s: %v", topic, err)
		}
	}
}

func TestDLQListShowReplayPurge(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	mapping := newPoison(t, "mapping_error", true)
	garbage := newPoison(t, "payload_invalid", false)
	forwarded := newPoison(t, "", true) // forwarded by Pub/Sub's dead-letter policy
	delete(forwarded.attrs, "error_reason")
	forwarded.attrs["CloudPubSubDeadLetterSourceDeliveryCount"] = "10"
	var msgs []*pubsub.Message
	for _, p := range []poison{mapping, garbage, forwarded} {
		msgs = append(msgs, &pubsub.Message{Data: p.body, Attributes: p.attrs})
	}
	publish(t, ps, "items.events.dlq-view", msgs...)
	dlq := []string{"--subscription", "items.events.dlq-view"}

	// list does not ack: twice the same three messages, reasons shown.
	for i := 0; i < 2; i++ {
		r := relayctl(t, env, append([]string{"dlq", "list", "--json"}, dlq...)...)
		var got []dlqMessage
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != ExitProblem || len(got) != 3 {
			t.Fatalf("dlq list #%d: exit %d, %d messages, err %v; want %d and 3", i, r.code, len(got), err, ExitProblem)
		}
	}
	r := relayctl(t, env, append([]string{"dlq", "list"}, dlq...)...)
	for _, want := range []string{"mapping_error", "payload_invalid", "max_delivery_attempts", "mapping_error=1, max_delivery_attempts=1, payload_invalid=1"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("dlq list output lacks %q", want)
		}
	}
	if r := relayctl(t, env, append([]string{"dlq", "list", "--reason", "payload_invalid", "--json"}, dlq...)...); strings.Count(r.stdout, `"message_id"`) != 1 {
		t.Fatalf("dlq list --reason payload_invalid: want 1 message")
	}

	// show decodes the envelope, or says why it cannot.
	r = relayctl(t, env, append([]string{"dlq", "show", "--ids", mapping.eventID}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, `"aggregate_id": "`+mapping.aggID+`"`) || !strings.Contains(r.stdout, "error_reason = mapping_error") {
		t.Fatalf("dlq show of a valid envelope: exit %d", r.code)
	}
	r = relayctl(t, env, append([]string{"dlq", "show", "--reason", "payload_invalid"}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "body does not decode") {
		t.Fatalf("dlq show of garbage: exit %d", r.code)
	}

	// replay: refused without --by/--why; dry run changes nothing.
	if r := relayctl(t, env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--reason", "mapping_error"}, dlq...)...); r.code != ExitUsage || !strings.Contains(r.stderr, "--by and --why") {
		t.Fatalf("dlq replay without --by/--why: exit %d", r.code)
	}
	if r := relayctl(t, env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--by", "a", "--why", "b"}, dlq...)...); r.code != ExitUsage || !strings.Contains(r.stderr, "--all") {
		t.Fatalf("dlq replay without a filter: exit %d", r.code)
	}
	r = relayctl(t, env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--reason", "mapping_error", "--dry-run"}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "dry run: 1 message(s) would be republished to items.events") {
		t.Fatalf("dlq replay --dry-run: exit %d", r.code)
	}
	if n := dlqCount(t, env, dlq); n != 3 {
		t.Fatalf("DLQ after dry run: %d messages, want 3", n)
	}

	// Real replay: republished to the main topic with ordering key and the
	// original attributes, acked in the DLQ, audited.
	r = relayctl(t, env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--reason", "mapping_error", "--by", "alice", "--why", "INC-7 mapping fixed"}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "replayed 1 message(s) to items.events") {
		t.Fatalf("dlq replay: exit %d", r.code)
	}
	got := pullOne(t, ps, "items.audit")
	if got.GetOrderingKey() != mapping.aggID || string(got.GetData()) != string(mapping.body) {
		t.Fatalf("republished message: ordering key %q, body equal %t", got.GetOrderingKey(), string(got.GetData()) == string(mapping.body))
	}
	for k, v := range mapping.attrs {
		_, removed := map[string]bool{"error_reason": true, "error": true, "projection": true, "delivery_attempt": true, "original_message_id": true, "dead_lettered_at": true}[k]
		if removed && got.GetAttributes()[k] != "" {
			t.Errorf("republished message keeps dead-letter attribute %s", k)
		}
		if !removed && got.GetAttributes()[k] != v {
			t.Errorf("republished attribute %s = %q, want %q", k, got.GetAttributes()[k], v)
		}
	}
	if n := dlqCount(t, env, dlq); n != 2 {
		t.Fatalf("DLQ after replay: %d messages, want 2", n)
	}
	// For the subscription that dead-lettered it alone (items.view
	// dead-letters into the topic of items.events.dlq-view): the other
	// projection's consumer acks it unapplied. The audit row has the outcome.
	if target := got.GetAttributes()[contract.AttrReplayFor]; target != "items.view" {
		t.Errorf("republished message: %s = %q, want items.view", contract.AttrReplayFor, target)
	}
	if d := lastAudit(t, db, "dlq replay"); d["outcome"] != "ok" || d["replay_for"] != "items.view" || d["replayed"] != float64(1) || d["failed"] != float64(0) {
		t.Errorf("dlq replay audit details %v: want outcome ok, replay_for items.view, replayed 1, failed 0", d)
	}

	// --ids naming a message the scan did not find: exit 1, naming it.
	r = relayctl(t, env, append([]string{"dlq", "replay", "-f", pubsubConfig, "--ids", "no-such-message", "--by", "alice", "--why", "INC-7"}, dlq...)...)
	if r.code != ExitProblem || !strings.Contains(r.stderr, "1 of the 1 --ids not found") || !strings.Contains(r.stderr, "no-such-message") {
		t.Fatalf("dlq replay of an unknown id: exit %d, stderr %q; want %d naming it", r.code, r.stderr, ExitProblem)
	}
	if n := dlqCount(t, env, dlq); n != 2 {
		t.Fatalf("DLQ after replaying an unknown id: %d messages, want 2", n)
	}

	// purge acks.
	r = relayctl(t, env, append([]string{"dlq", "purge", "--reason", "payload_invalid", "--by", "alice", "--why", "garbage from a test producer"}, dlq...)...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "purged 1 message(s)") {
		t.Fatalf("dlq purge: exit %d", r.code)
	}
	if d := lastAudit(t, db, "dlq purge"); d["outcome"] != "ok" || d["purged"] != float64(1) {
		t.Errorf("dlq purge audit details %v: want outcome ok, purged 1", d)
	}
	if n := dlqCount(t, env, dlq); n != 1 {
		t.Fatalf("DLQ after purge: %d messages, want 1", n)
	}
	if n := count(t, db, "SELECT count(*) FROM admin_audit WHERE command IN ('dlq replay', 'dlq purge') AND requested_by = 'alice'"); n != 2 {
		t.Fatalf("admin_audit dlq rows: %d, want 2", n)
	}
}

// A scan that stops at --scan says the DLQ may hold more; one that drained
// it does not.
func TestDLQScanLimitIsReported(t *testing.T) {
	t.Parallel()
	ps, _, env := ensured(t)
	var msgs []*pubsub.Message
	for range 5 {
		p := newPoison(t, "mapping_error", true)
		msgs = append(msgs, &pubsub.Message{Data: p.body, Attributes: p.attrs})
	}
	publish(t, ps, "items.events.dlq-search", msgs...)
	dlq := []string{"--subscription", "items.events.dlq-search"}
	r := relayctl(t, env, append([]string{"dlq", "list", "--scan", "2"}, dlq...)...)
	if !strings.Contains(r.stdout, "2 message(s) match of 2 pulled") || !strings.Contains(r.stdout, "stopped at --scan 2: the subscription may hold more") {
		t.Fatalf("dlq list --scan 2 does not say it stopped early:\n%s", r.stdout)
	}
	r = relayctl(t, env, append([]string{"dlq", "list"}, dlq...)...)
	if !strings.Contains(r.stdout, "5 message(s) match of 5 pulled") || strings.Contains(r.stdout, "stopped at --scan") {
		t.Fatalf("dlq list of the whole DLQ:\n%s", r.stdout)
	}
}

func dlqCount(t *testing.T, env map[string]string, dlq []string) int {
	t.Helper()
	r := relayctl(t, env, append([]string{"dlq", "list", "--json"}, dlq...)...)
	var got []dlqMessage
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("dlq list --json: %v", err)
	}
	return len(got)
}

func pullOne(t *testing.T, ps *gpubsubtest.Server, sub string) *pb.PubsubMessage {
	t.Helper()
	resp, err := ps.Client.SubscriptionAdminClient.Pull(t.Context(), &pb.PullRequest{
		Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, sub), MaxMessages: 10,
	})
	if err != nil || len(resp.GetReceivedMessages()) != 1 {
		t.Fatalf("pulling %s: %d messages, err %v; want 1", sub, len(resp.GetReceivedMessages()), err)
	}
	return resp.GetReceivedMessages()[0].GetMessage()
}

// A dead-letter subscription that does not exist is named as such, not as a
// missing topic (the label it had before subscription_not_found existed).
func TestDLQListMissingSubscription(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	r := relayctl(t, psEnv(ps, nil), "dlq", "list", "--subscription", "items.events.dlq-missing")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "subscription_not_found") || strings.Contains(r.stderr, "topic_not_found") {
		t.Fatalf("want exit %d naming subscription_not_found, got %d: %s", ExitRuntime, r.code, r.stderr)
	}
}

// lastAudit is the details of the newest admin_audit row of command.
func lastAudit(t *testing.T, db *testDB, command string) map[string]any {
	t.Helper()
	var b []byte
	if err := db.Pool.QueryRow(t.Context(), `SELECT details FROM admin_audit WHERE command = $1 ORDER BY id DESC LIMIT 1`, command).Scan(&b); err != nil {
		t.Fatalf("admin_audit row of %s: %v", command, err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}
