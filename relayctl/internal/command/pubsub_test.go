package command

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

const pubsubConfig = "testdata/pubsub.yaml"

// auditTap is a subscription the tests add to read what reached the
// events topic; configs/pubsub.yaml does not hold it.
const auditTap = "items.audit"

// psEnv points relayctl at a pstest server.
func psEnv(ps *gpubsubtest.Server, extra map[string]string) map[string]string {
	env := map[string]string{"PUBSUB_PROJECT_ID": gpubsubtest.Project, "PUBSUB_EMULATOR_HOST": ps.Addr}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// ensured is a pstest server with the resources of configs/pubsub.yaml, a
// database, and the environment that points relayctl at both.
func ensured(t *testing.T) (*gpubsubtest.Server, *testDB, map[string]string) {
	t.Helper()
	ps := gpubsubtest.New(t)
	db, env := ensure(t, ps)
	return ps, db, env
}

// ensure creates a database and the configured resources on ps.
func ensure(t *testing.T, ps *gpubsubtest.Server) (*testDB, map[string]string) {
	t.Helper()
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})
	if r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig); r.code != ExitOK {
		t.Fatalf("pubsub ensure: exit %d", r.code)
	}
	// The tests' own ordered tap on the events topic (as the e2e suite's).
	ps.Subscription(t, auditTap, "items.events", gpubsubtest.SubscriptionOptions{Ordered: true, AckDeadline: 30e9})
	return db, env
}

func TestPubSubEnsureTwice(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	db := newDB(t)
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL})

	r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig, "--dry-run")
	if r.code != ExitProblem || !strings.Contains(r.stdout, "created") {
		t.Fatalf("dry run on an empty project: exit %d, want %d and creations", r.code, ExitProblem)
	}
	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig, "--json", "--by", "test", "--why", "setup")
	var first []gpubsub.Change
	if err := json.Unmarshal([]byte(r.stdout), &first); err != nil || r.code != ExitOK {
		t.Fatalf("first ensure: exit %d, err %v", r.code, err)
	}
	if len(first) != 7 {
		t.Fatalf("first ensure reported %d resources, want 3 topics + 4 subscriptions", len(first))
	}
	for _, ch := range first {
		if ch.Name == auditTap {
			t.Errorf("ensure created %s: the audit tap belongs to the test suites, not configs/pubsub.yaml", auditTap)
		}
	}
	for _, ch := range first {
		if ch.Action != gpubsub.Created {
			t.Errorf("first ensure: %s %s %s, want created", ch.Kind, ch.Name, ch.Action)
		}
	}
	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig)
	if r.code != ExitOK || !strings.Contains(r.stdout, "no changes") || strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "updated") {
		t.Fatalf("second ensure: exit %d, stdout %q; want no changes", r.code, r.stdout)
	}
	if n := count(t, db, "SELECT count(*) FROM admin_audit WHERE command = 'pubsub ensure'"); n != 1 {
		t.Fatalf("admin_audit rows: %d, want 1 (the run that changed something)", n)
	}

	// The settings arrived: ordering, dead-letter policy, retry policy.
	sub, err := ps.Client.SubscriptionAdminClient.GetSubscription(t.Context(), subReq("items.view"))
	if err != nil {
		t.Fatal(err)
	}
	if !sub.EnableMessageOrdering || sub.DeadLetterPolicy.GetMaxDeliveryAttempts() != 10 ||
		!strings.HasSuffix(sub.DeadLetterPolicy.GetDeadLetterTopic(), "/items.events.dlq-view") ||
		sub.RetryPolicy.GetMaximumBackoff().AsDuration().Seconds() != 60 || sub.AckDeadlineSeconds != 30 || !sub.RetainAckedMessages {
		t.Fatalf("projection-pg subscription not as configured: %v", sub)
	}

	// No subscription expires (Pub/Sub's default deletes one idle for 31
	// days; a dead-letter topic without its subscription drops messages).
	for _, name := range []string{"items.view", "items.search", "items.events.dlq-view", "items.events.dlq-search"} {
		s, err := ps.Client.SubscriptionAdminClient.GetSubscription(t.Context(), subReq(name))
		if err != nil {
			t.Fatal(err)
		}
		if s.ExpirationPolicy == nil || s.ExpirationPolicy.Ttl != nil {
			t.Errorf("subscription %s expiration policy %v, want one without a TTL (never expires)", name, s.ExpirationPolicy)
		}
	}

	// Drift in a mutable field is updated; in an immutable one, a conflict.
	sub.AckDeadlineSeconds = 99
	if _, err := ps.Client.SubscriptionAdminClient.UpdateSubscription(t.Context(), updateAckDeadline(sub)); err != nil {
		t.Fatal(err)
	}
	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig)
	if r.code != ExitOK || !strings.Contains(r.stdout, "ack_deadline_seconds: 99 -> 30") {
		t.Fatalf("ensure after drift: exit %d, stdout %q", r.code, r.stdout)
	}
	// A subscription created with the default expiration gets "never".
	dlq, err := ps.Client.SubscriptionAdminClient.GetSubscription(t.Context(), subReq("items.events.dlq-view"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ps.Client.SubscriptionAdminClient.UpdateSubscription(t.Context(), updateExpiration(dlq, 31*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig)
	if r.code != ExitOK || !strings.Contains(r.stdout, "expiration_policy: after 744h0m0s idle -> never") {
		t.Fatalf("ensure after an expiration drift: exit %d, stdout %q", r.code, r.stdout)
	}
	deleteSub(t, ps, "items.events.dlq-search")
	ps.Subscription(t, "items.events.dlq-search", "items.events.dlq-search", gpubsubtest.SubscriptionOptions{Ordered: true, AckDeadline: 60e9})
	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig)
	if r.code != ExitProblem || !strings.Contains(r.stdout, "conflict") || !strings.Contains(r.stdout, "enable_message_ordering: true -> false") {
		t.Fatalf("ensure with an immutable difference: exit %d, stdout %q", r.code, r.stdout)
	}

	// A bad file names the key.
	r = relayctl(t, env, "pubsub", "ensure", "-f", writeFile(t, "topics: [{name: x}]\n"))
	if r.code != ExitUsage || !strings.Contains(r.stderr, "topics[0].name") {
		t.Fatalf("bad file: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestPubSubEnsureBeforeMigrate: ensure on a schema without eventrelay's
// tables says to migrate first (exit 2), instead of a failed audit insert.
func TestPubSubEnsureBeforeMigrate(t *testing.T) {
	t.Parallel()
	ps := gpubsubtest.New(t)
	db := newDB(t)
	exec(t, db, "CREATE SCHEMA unmigrated")
	env := psEnv(ps, map[string]string{"DATABASE_URL": db.URL, "DATABASE_SCHEMA": "unmigrated"})
	r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig, "--by", "test", "--why", "setup")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "run `relayctl migrate up`") {
		t.Fatalf("ensure before migrate: exit %d, stderr %q; want %d saying to migrate first", r.code, r.stderr, ExitUsage)
	}
}
