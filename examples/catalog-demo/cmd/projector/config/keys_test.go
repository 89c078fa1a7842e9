package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/settings"
)

// accepted lists every key and environment variable the projector daemon
// accepts, with a valid value other than its default. Removing or
// renaming one breaks deployments: this list only grows.
var accepted = []struct{ key, env, value string }{
	{"http.port", "PROJECTOR_HTTP_PORT", "9099"},
	{"database.url", "DATABASE_URL", "postgres://u@db2:5432/y"},
	{"database.schema", "DATABASE_SCHEMA", "other"},
	{"database.max_conns", "DATABASE_MAX_CONNS", "7"},
	{"database.connect_timeout", "DATABASE_CONNECT_TIMEOUT", "7s"},
	{"pubsub.project_id", "PUBSUB_PROJECT_ID", "other-project"},
	{"pubsub.emulator_host", "PUBSUB_EMULATOR_HOST", "127.0.0.1:8099"},
	{"elastic.url", "ELASTIC_URL", "http://es2:9200"},
	{"elastic.username", "ELASTIC_USERNAME", "someone"},
	{"elastic.password", "ELASTIC_PASSWORD", "secret"},
	{"elastic.request_timeout", "ELASTIC_REQUEST_TIMEOUT", "7s"},
	{"receive.max_outstanding_messages", "PROJECTOR_MAX_OUTSTANDING_MESSAGES", "77"},
	{"receive.max_outstanding_bytes", "PROJECTOR_MAX_OUTSTANDING_BYTES", "7777"},
	{"receive.num_goroutines", "PROJECTOR_NUM_GOROUTINES", "7"},
	{"receive.max_extension", "PROJECTOR_MAX_EXTENSION", "7m0s"},
	{"receive.ack_deadline", "PROJECTOR_ACK_DEADLINE", "17s"},
	{"receive.retry_min", "PROJECTOR_RECEIVE_RETRY_MIN", "7s"},
	{"receive.retry_max", "PROJECTOR_RECEIVE_RETRY_MAX", "7m0s"},
	{"receive.exactly_once", "PROJECTOR_EXACTLY_ONCE", "true"},
	{"batch.size", "PROJECTOR_BATCH_SIZE", "7"},
	{"batch.linger", "PROJECTOR_BATCH_LINGER", "7ms"},
	{"batch.workers", "PROJECTOR_WORKERS", "7"},
	{"batch.timeout", "PROJECTOR_BATCH_TIMEOUT", "7s"},
	{"batch.retry_backoff_min", "PROJECTOR_RETRY_BACKOFF_MIN", "7ms"},
	{"batch.retry_backoff_max", "PROJECTOR_RETRY_BACKOFF_MAX", "7s"},
	{"inbox_retention.age", "PROJECTOR_INBOX_RETENTION", "7h0m0s"},
	{"inbox_retention.interval", "PROJECTOR_INBOX_RETENTION_INTERVAL", "7s"},
	{"inbox_retention.batch_size", "PROJECTOR_INBOX_RETENTION_BATCH_SIZE", "77"},
	{"videos.enabled", "PROJECTOR_VIDEOS_ENABLED", "false"},
	{"videos.subscription", "PROJECTOR_VIDEOS_SUBSCRIPTION", "videos-7"},
	{"videos.dead_letter_topic", "PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC", "videos-dlq-7"},
	{"search.enabled", "PROJECTOR_SEARCH_ENABLED", "false"},
	{"search.subscription", "PROJECTOR_SEARCH_SUBSCRIPTION", "search-7"},
	{"search.dead_letter_topic", "PROJECTOR_SEARCH_DEAD_LETTER_TOPIC", "search-dlq-7"},
	{"search.alias", "ELASTIC_INDEX_ALIAS", "videos-7"},
	{"search.require_ready", "PROJECTOR_REQUIRE_ES_READY", "true"},
	{"drain_timeout", "PROJECTOR_SHUTDOWN_TIMEOUT", "7s"},
	{"stall_after", "PROJECTOR_STALL_AFTER", "7s"},
	{"log_level", "PROJECTOR_LOG_LEVEL", "debug"},
}

// needs lists the other variables a value needs to validate.
var needs = map[string]map[string]string{"ELASTIC_PASSWORD": {"ELASTIC_USERNAME": "someone"}}

// base is what every load below needs to validate.
var base = map[string]string{"DATABASE_URL": "postgres://u@db:5432/x", "ELASTIC_URL": "http://es:9200"}

// lookupIn reads key's value from c.
func lookupIn(t *testing.T, c pconf.Config, key string) string {
	t.Helper()
	for _, s := range settings.Keys(c) {
		if s.Key == key {
			return fmt.Sprint(s.Value.Interface())
		}
	}
	t.Fatalf("%s is no key of the configuration", key)
	return ""
}

// TestEveryKeyAndVariableTakesEffect sets each accepted key, once from the
// environment and once from a YAML file, and finds its value in the
// loaded configuration.
func TestEveryKeyAndVariableTakesEffect(t *testing.T) {
	for _, a := range accepted {
		env := map[string]string{a.env: a.value}
		fileEnv := map[string]string{}
		for k, v := range needs[a.env] {
			env[k], fileEnv[k] = v, v
		}
		for k, v := range base {
			fileEnv[k] = v
			if _, set := env[k]; !set {
				env[k] = v
			}
		}
		c := pconf.Default()
		if lookupIn(t, c, a.key) == a.value {
			t.Fatalf("%s: the test value %s is the default", a.key, a.value)
		}
		if err := settings.LoadWithEnv("", &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
			t.Errorf("%s=%s: %v", a.env, a.value, err)
			continue
		}
		if got := lookupIn(t, c, a.key); got != a.value {
			t.Errorf("%s=%s: %s is %s", a.env, a.value, a.key, got)
		}

		parts := strings.Split(a.key, ".")
		doc := a.value
		if a.key == "log_level" || strings.Contains(a.value, ":") {
			doc = fmt.Sprintf("%q", a.value)
		}
		doc = parts[len(parts)-1] + ": " + doc
		if len(parts) == 2 {
			doc = parts[0] + ":\n  " + doc
		}
		path := filepath.Join(t.TempDir(), "projector.yaml")
		if err := os.WriteFile(path, []byte(doc+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		c = pconf.Default()
		if err := settings.LoadWithEnv(path, &c, func(k string) (string, bool) { v, ok := fileEnv[k]; return v, ok }); err != nil && a.env != "DATABASE_URL" && a.env != "ELASTIC_URL" {
			t.Errorf("%s in the file: %v", a.key, err)
			continue
		}
		if a.env == "DATABASE_URL" || a.env == "ELASTIC_URL" {
			continue // the environment (base) wins over the file
		}
		if got := lookupIn(t, c, a.key); got != a.value {
			t.Errorf("%s in the file: it is %s", a.key, got)
		}
	}
}

// TestOptionsCarryEveryGenericKey shows that the generic keys reach
// projector.Options and BatchOptions.
func TestOptionsCarryEveryGenericKey(t *testing.T) {
	env := map[string]string{}
	for k, v := range base {
		env[k] = v
	}
	for _, a := range accepted {
		if strings.HasPrefix(a.key, "receive.") || strings.HasPrefix(a.key, "batch.") ||
			strings.HasPrefix(a.key, "inbox_retention.") || a.key == "drain_timeout" || a.key == "stall_after" || a.key == "database.schema" {
			env[a.env] = a.value
		}
	}
	c := pconf.Default()
	if err := settings.LoadWithEnv("", &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	o, b := c.Options(nil, nil, nil), c.Batch
	want := projector.Options{
		Schema: "other",
		Receive: projector.ReceiveOptions{MaxOutstandingMessages: 77, MaxOutstandingBytes: 7777, NumGoroutines: 7,
			MaxExtension: 7 * time.Minute, AckDeadline: 17 * time.Second, RetryMin: 7 * time.Second, RetryMax: 7 * time.Minute, ExactlyOnce: true},
		DrainTimeout: 7 * time.Second, StallAfter: 7 * time.Second, InboxRetentionInterval: 7 * time.Second, InboxRetentionBatchSize: 77,
		SubscriptionCheckInterval: 30 * time.Second,
	}
	if o != want {
		t.Errorf("Options() = %+v, want %+v", o, want)
	}
	wantB := projector.BatchOptions{Size: 7, Linger: 7 * time.Millisecond, Workers: 7, Timeout: 7 * time.Second,
		RetryBackoffMin: 7 * time.Millisecond, RetryBackoffMax: 7 * time.Second}
	if b != wantB {
		t.Errorf("Batching() = %+v, want %+v", b, wantB)
	}
	if c.InboxRetention.Age != 7*time.Hour {
		t.Errorf("inbox_retention.age = %s", c.InboxRetention.Age)
	}
}
