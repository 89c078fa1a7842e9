package command

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// validate checks a resources file offline and prints it with the
// defaults applied, durations in Pub/Sub's seconds.
func TestPubSubValidatePrintsTheDefaults(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pubsub.yaml")
	if err := os.WriteFile(path, []byte(`pubsub:
  project_id: orders-local
topics:
  - name: orders.events
    retention: 10m
  - name: orders.events.dlq
subscriptions:
  - name: orders.view
    topic: orders.events
    ordered: true
    retry: {}
    dead_letter:
      topic: orders.events.dlq
  - name: orders.events.dlq
    topic: orders.events.dlq
    ack_deadline: 90s
    retention: 1h
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// Nothing listens there: validate connects to nothing.
	env := map[string]string{"PUBSUB_EMULATOR_HOST": "127.0.0.1:1"}
	r := relayctl(t, env, "pubsub", "validate", "-f", path, "--json")
	if r.code != ExitOK {
		t.Fatalf("exit %d, want %d", r.code, ExitOK)
	}
	var got resourcesJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	want := resourcesJSON{ProjectID: "orders-local",
		Topics: []topicJSON{{Name: "orders.events", Retention: "600s"}, {Name: "orders.events.dlq"}},
		Subscriptions: []subscriptionJSON{
			{Name: "orders.view", Topic: "orders.events", Ordered: true, AckDeadline: "10s", Retention: "604800s",
				Retry:      &retryJSON{MinBackoff: "10s", MaxBackoff: "600s"},
				DeadLetter: &deadLetterJSON{Topic: "orders.events.dlq", MaxDeliveryAttempts: 5}},
			{Name: "orders.events.dlq", Topic: "orders.events.dlq", AckDeadline: "90s", Retention: "3600s"},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("validate --json:\n got %+v\nwant %+v", got, want)
	}

	r = relayctl(t, env, "pubsub", "validate", "-f", path)
	if r.code != ExitOK || !strings.Contains(r.stdout, "valid: 2 topic(s), 2 subscription(s) in project orders-local") ||
		!strings.Contains(r.stdout, "dead letters to orders.events.dlq after 5 attempts") {
		t.Errorf("validate: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestPubSubValidateNamesTheKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "pubsub.yaml")
	if err := os.WriteFile(path, []byte(`pubsub:
  project_id: orders-local
topics:
  - name: orders.events
subscriptions:
  - name: orders.view
    topic: orders.events
    ack_deadline: 5s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := relayctl(t, nil, "pubsub", "validate", "-f", path, "--json")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "subscriptions[0].ack_deadline") || r.stdout != "" {
		t.Errorf("an ack deadline below 10s: exit %d, stdout %q, stderr %q; want %d naming subscriptions[0].ack_deadline", r.code, r.stdout, r.stderr, ExitUsage)
	}
}
