package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
)

func baseEnv() map[string]string {
	return map[string]string{
		"DATABASE_URL":      "postgres://u@127.0.0.1:5432/db",
		"PUBSUB_PROJECT_ID": "eventrelay-test",
		"DATABASE_SCHEMA":   "items",
	}
}

// TestSchemaIsRequired: no default schema; the error names the key and the
// alternative (search_path in the URL), which is then enough.
func TestSchemaIsRequired(t *testing.T) {
	env := baseEnv()
	delete(env, "DATABASE_SCHEMA")
	if _, err := load(t, "", env); err == nil || !strings.Contains(err.Error(), "database.schema (DATABASE_SCHEMA)") || !strings.Contains(err.Error(), "search_path") {
		t.Fatalf("no schema: %v, want an error naming database.schema and search_path", err)
	}
	env["DATABASE_URL"] = "postgres://u@127.0.0.1:5432/db?search_path=orders"
	c, err := load(t, "", env)
	if err != nil || c.Options().Schema != "orders" {
		t.Fatalf("schema from the URL's search_path: %v, schema %q", err, c.Options().Schema)
	}
}

func load(t *testing.T, path string, env map[string]string) (Config, error) {
	t.Helper()
	c := Default()
	err := settings.LoadWithEnv(path, &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return c, err
}

// setting is one key of the daemon: its yaml path, its environment
// variable (empty: none), a valid value that is not its default, and where
// that value must arrive.
type setting struct {
	key, env, value string
	// yaml is the value in a YAML file (default: value).
	yaml   string
	arrive func(c Config, o relay.Options) bool
}

// everySetting lists every key and environment variable the daemon accepts.
var everySetting = []setting{
	{"database.url", "DATABASE_URL", "postgres://x@127.0.0.1:5433/other", "", func(c Config, _ relay.Options) bool {
		return c.Database.URL == "postgres://x@127.0.0.1:5433/other"
	}},
	{"database.schema", "DATABASE_SCHEMA", "orders", "", func(c Config, o relay.Options) bool { return c.Database.Schema == "orders" && o.Schema == "orders" }},
	{"database.max_conns", "DATABASE_MAX_CONNS", "17", "", func(c Config, _ relay.Options) bool { return c.Database.MaxConns == 17 }},
	{"database.connect_timeout", "DATABASE_CONNECT_TIMEOUT", "7", "7s", func(c Config, _ relay.Options) bool { return c.Database.ConnectTimeout == 7*time.Second }},
	{"pubsub.project_id", "PUBSUB_PROJECT_ID", "other-project", "", func(c Config, _ relay.Options) bool { return c.PubSub.ProjectID == "other-project" }},
	{"pubsub.emulator_host", "PUBSUB_EMULATOR_HOST", "127.0.0.1:8085", "", func(c Config, _ relay.Options) bool { return c.PubSub.EmulatorHost == "127.0.0.1:8085" }},
	{"outbox.worker_id", "OUTBOX_WORKER_ID", "replica-a", "", func(_ Config, o relay.Options) bool { return o.WorkerID == "replica-a" }},
	{"outbox.mode", "OUTBOX_MODE", "log", "", func(_ Config, o relay.Options) bool { return o.Mode == relay.ModeLog }},
	{"outbox.log_slot", "OUTBOX_LOG_SLOT", "orders_outbox", "", func(_ Config, o relay.Options) bool { return o.Log.Slot == "orders_outbox" }},
	{"outbox.log_publication", "OUTBOX_LOG_PUBLICATION", "orders_pub", "", func(_ Config, o relay.Options) bool { return o.Log.Publication == "orders_pub" }},
	{"outbox.concurrency", "OUTBOX_CONCURRENCY", "7", "", func(_ Config, o relay.Options) bool { return o.Concurrency == 7 }},
	{"outbox.bulk_size", "OUTBOX_BULK_SIZE", "123", "", func(_ Config, o relay.Options) bool { return o.BulkSize == 123 }},
	{"outbox.poll_interval", "OUTBOX_POLL_INTERVAL_SECONDS", "0.25", "250ms", func(_ Config, o relay.Options) bool { return o.PollInterval == 250*time.Millisecond }},
	{"outbox.listen", "OUTBOX_LISTEN", "false", "", func(_ Config, o relay.Options) bool { return o.ListenOff }},
	{"outbox.fetch_cooldown", "OUTBOX_FETCH_COOLDOWN_SECONDS", "0.03", "30ms", func(_ Config, o relay.Options) bool {
		return o.FetchCooldown == 30*time.Millisecond && !o.FetchCooldownOff
	}},
	{"outbox.fetch_cooldown", "OUTBOX_FETCH_COOLDOWN_SECONDS", "0", "", func(_ Config, o relay.Options) bool { return o.FetchCooldownOff }},
	{"outbox.lease", "OUTBOX_LEASE_SECONDS", "45", "45s", func(_ Config, o relay.Options) bool { return o.Lease == 45*time.Second }},
	{"outbox.partition_heartbeat", "OUTBOX_PARTITION_HEARTBEAT_SECONDS", "3", "3s", func(_ Config, o relay.Options) bool { return o.PartitionHeartbeat == 3*time.Second }},
	{"outbox.reclaim_interval", "OUTBOX_RECLAIM_INTERVAL_SECONDS", "4", "4s", func(_ Config, o relay.Options) bool { return o.ReclaimInterval == 4*time.Second }},
	{"outbox.max_processing", "OUTBOX_MAX_PROCESSING_SECONDS", "600", "10m", func(_ Config, o relay.Options) bool { return o.MaxProcessing == 10*time.Minute }},
	{"outbox.max_attempts", "OUTBOX_MAX_ATTEMPTS", "9", "", func(_ Config, o relay.Options) bool { return o.MaxAttempts == 9 }},
	{"outbox.base_backoff", "OUTBOX_BASE_BACKOFF_SECONDS", "2", "2s", func(_ Config, o relay.Options) bool { return o.BaseBackoff == 2*time.Second }},
	{"outbox.max_backoff", "OUTBOX_MAX_BACKOFF_SECONDS", "60", "1m", func(_ Config, o relay.Options) bool { return o.MaxBackoff == time.Minute }},
	{"outbox.jitter", "OUTBOX_BACKOFF_JITTER", "full", "", func(_ Config, o relay.Options) bool { return o.Jitter == "full" }},
	{"outbox.stats_interval", "OUTBOX_STATS_INTERVAL_SECONDS", "5", "5s", func(_ Config, o relay.Options) bool { return o.StatsInterval == 5*time.Second }},
	{"outbox.stall_after", "OUTBOX_STALL_AFTER_SECONDS", "90", "90s", func(_ Config, o relay.Options) bool { return o.StallAfter == 90*time.Second && !o.StallAfterOff }},
	{"outbox.stall_after", "OUTBOX_STALL_AFTER_SECONDS", "0", "", func(_ Config, o relay.Options) bool { return o.StallAfterOff }},
	{"outbox.drain_timeout", "OUTBOX_GRACE_PERIOD_SECONDS", "8", "8s", func(_ Config, o relay.Options) bool { return o.DrainTimeout == 8*time.Second }},
	{"outbox.grace_period", "", "", "9s", func(_ Config, o relay.Options) bool { return o.DrainTimeout == 9*time.Second }}, // alias
	{"outbox.notify_channel", "", "", "orders_wakeups", func(_ Config, o relay.Options) bool { return o.NotifyChannel == "orders_wakeups" }},
	{"outbox.log_standby_retry", "", "", "3s", func(_ Config, o relay.Options) bool { return o.Log.StandbyRetry == 3*time.Second }},
	{"outbox.log_confirm_interval", "", "", "2s", func(_ Config, o relay.Options) bool { return o.Log.ConfirmInterval == 2*time.Second }},
	{"outbox.log_linger", "", "", "5ms", func(_ Config, o relay.Options) bool { return o.Log.Linger == 5*time.Millisecond }},
	{"outbox.retention", "OUTBOX_RETENTION_SECONDS", "3600", "1h", func(_ Config, o relay.Options) bool { return o.Retention == time.Hour && !o.RetentionOff }},
	{"outbox.retention", "OUTBOX_RETENTION_SECONDS", "0", "", func(_ Config, o relay.Options) bool { return o.RetentionOff }},
	{"outbox.retention_interval", "OUTBOX_RETENTION_INTERVAL_SECONDS", "30", "30s", func(_ Config, o relay.Options) bool { return o.RetentionInterval == 30*time.Second }},
	{"outbox.retention_batch_size", "OUTBOX_RETENTION_BATCH_SIZE", "77", "", func(_ Config, o relay.Options) bool { return o.RetentionBatchSize == 77 }},
	{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR", "5.5", "", func(_ Config, o relay.Options) bool { return o.ReindexBloatFactor == 5.5 && !o.ReindexOff }},
	{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR", "0", "", func(_ Config, o relay.Options) bool { return o.ReindexOff }},
	{"outbox.reindex_min_bytes", "OUTBOX_REINDEX_MIN_BYTES", "1234567", "", func(_ Config, o relay.Options) bool { return o.ReindexMinBytes == 1234567 }},
	{"publish.topics", "", "", "{orders.order: orders-events}", func(_ Config, o relay.Options) bool {
		return o.Publish.Topics["orders.order"] == "orders-events"
	}},
	{"publish.max_message_bytes", "OUTBOX_MAX_MESSAGE_BYTES", "4000", "", func(_ Config, o relay.Options) bool { return o.Publish.MaxMessageBytes == 4000 }},
	{"publish.timeout", "OUTBOX_PUBLISH_TIMEOUT_SECONDS", "9", "9s", func(_ Config, o relay.Options) bool { return o.Publish.Timeout == 9*time.Second }},
	{"publish.delay_threshold", "OUTBOX_PUBLISH_DELAY_THRESHOLD", "0.005", "5ms", func(_ Config, o relay.Options) bool {
		return o.Publish.DelayThreshold == 5*time.Millisecond && !o.Publish.DelayThresholdOff
	}},
	{"publish.delay_threshold", "OUTBOX_PUBLISH_DELAY_THRESHOLD", "0", "", func(_ Config, o relay.Options) bool { return o.Publish.DelayThresholdOff }},
	{"publish.count_threshold", "OUTBOX_PUBLISH_COUNT_THRESHOLD", "50", "", func(_ Config, o relay.Options) bool { return o.Publish.CountThreshold == 50 }},
	{"publish.max_inflight_requests", "OUTBOX_PUBLISH_MAX_INFLIGHT_REQUESTS", "64", "", func(_ Config, o relay.Options) bool { return o.Publish.MaxInflightRequests == 64 }},
	{"publish.ready_topic", "OUTBOX_READY_TOPIC", "orders-events", "", func(_ Config, o relay.Options) bool { return o.Publish.ReadyTopic == "orders-events" }},
	{"publish.subscriptions", "", "", "{orders-events: [orders-view]}", func(_ Config, o relay.Options) bool {
		return len(o.Publish.Subscriptions["orders-events"]) == 1 && o.Publish.Subscriptions["orders-events"][0] == "orders-view"
	}},
	{"publish.subscription_check_interval", "OUTBOX_SUBSCRIPTION_CHECK_SECONDS", "7", "7s", func(_ Config, o relay.Options) bool {
		return o.Publish.SubscriptionCheckInterval == 7*time.Second
	}},
	{"http.host", "OUTBOX_HTTP_HOST", "127.0.0.1", "", func(c Config, _ relay.Options) bool { return c.HTTP.Host == "127.0.0.1" }},
	{"http.port", "OUTBOX_HTTP_PORT", "9100", "", func(c Config, _ relay.Options) bool { return c.HTTP.Addr() == ":9100" }},
	{"log.level", "LOG_LEVEL", "debug", "", func(c Config, _ relay.Options) bool { return c.Log.Level == "debug" }},
}

// TestEveryKeyAndVariableReachesTheRelay: each key the daemon accepts, set
// in a YAML file and (where it has one) through its environment variable,
// arrives in relay.Options (or, for the database, Pub/Sub, HTTP and log
// keys, in the configuration the daemon uses itself), and the list above
// holds every key of Config.
func TestEveryKeyAndVariableReachesTheRelay(t *testing.T) {
	dir := t.TempDir()
	listed := map[string]string{}
	for _, s := range everySetting {
		listed[s.key] = s.env
		if s.env != "" {
			env := baseEnv()
			env[s.env] = s.value
			c, err := load(t, "", env)
			if err != nil {
				t.Errorf("%s=%s: %v", s.env, s.value, err)
			} else if !s.arrive(c, c.Options()) {
				t.Errorf("%s=%s did not reach the relay: %+v", s.env, s.value, c.Options())
			}
		}
		v := s.yaml
		if v == "" {
			v = s.value
		}
		section, name, _ := strings.Cut(s.key, ".")
		path := filepath.Join(dir, strings.ReplaceAll(s.key, ".", "_")+".yaml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf("%s:\n  %s: %s\n", section, name, v)), 0o600); err != nil {
			t.Fatal(err)
		}
		env := baseEnv()
		delete(env, s.env) // the file's value, not the environment's
		c, err := load(t, path, env)
		if err != nil {
			t.Errorf("%s: %s in a file: %v", s.key, v, err)
		} else if !s.arrive(c, c.Options()) {
			t.Errorf("%s: %s in a file did not reach the relay: %+v", s.key, v, c.Options())
		}
	}
	for _, s := range settings.Keys(Default()) {
		env, ok := listed[s.Key]
		if !ok {
			t.Errorf("key %s (%s) is not in the list of settings", s.Key, s.Env)
		} else if env != s.Env {
			t.Errorf("key %s: listed with %q, its variable is %q", s.Key, env, s.Env)
		}
	}
}

// TestShippedConfigLoads: configs/publisher.yaml with the required
// environment is valid, and the environment overrides it.
func TestShippedConfigLoads(t *testing.T) {
	env := baseEnv()
	env["OUTBOX_CONCURRENCY"] = "8"
	env["OUTBOX_LEASE_SECONDS"] = "45"
	c, err := load(t, "../../../configs/publisher.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	if o.Concurrency != 8 || o.Lease != 45*time.Second || c.Database.MaxConns != 12 || o.PartitionHeartbeat != 0 ||
		o.Publish.ReadyTopic == "" || o.Schema == "" || o.RetentionOff || o.ReindexOff || o.FetchCooldownOff || o.StallAfterOff || o.StallAfter != 2*time.Minute {
		t.Fatalf("loaded %+v", c)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestInvalidValuesNameTheKey: every bad value fails naming the YAML key
// and its environment variable.
func TestInvalidValuesNameTheKey(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"DATABASE_URL": ""}, []string{"database.url", "DATABASE_URL"}},
		{map[string]string{"PUBSUB_PROJECT_ID": ""}, []string{"pubsub.project_id", "PUBSUB_PROJECT_ID"}},
		{map[string]string{"OUTBOX_CONCURRENCY": "0"}, []string{"outbox.concurrency", "OUTBOX_CONCURRENCY"}},
		{map[string]string{"OUTBOX_CONCURRENCY": "300"}, []string{"outbox.concurrency", "OUTBOX_CONCURRENCY", "1..256"}},
		{map[string]string{"OUTBOX_CONCURRENCY": "lots"}, []string{"outbox.concurrency", "OUTBOX_CONCURRENCY"}},
		{map[string]string{"OUTBOX_BULK_SIZE": "-5"}, []string{"outbox.bulk_size", "OUTBOX_BULK_SIZE"}},
		{map[string]string{"OUTBOX_POLL_INTERVAL_SECONDS": "0"}, []string{"outbox.poll_interval", "OUTBOX_POLL_INTERVAL_SECONDS"}},
		{map[string]string{"OUTBOX_POLL_INTERVAL_SECONDS": "-1"}, []string{"outbox.poll_interval", "OUTBOX_POLL_INTERVAL_SECONDS"}},
		{map[string]string{"OUTBOX_LEASE_SECONDS": "soon"}, []string{"outbox.lease", "OUTBOX_LEASE_SECONDS"}},
		{map[string]string{"OUTBOX_MODE": "wal"}, []string{"outbox.mode", "OUTBOX_MODE", `"poll" or "log"`}},
		{map[string]string{"OUTBOX_LOG_SLOT": "Orders-Slot"}, []string{"outbox.log_slot", "OUTBOX_LOG_SLOT"}},
		{map[string]string{"OUTBOX_LEASE_SECONDS": "0.1"}, []string{"outbox.lease", "OUTBOX_LEASE_SECONDS"}},
		{map[string]string{"OUTBOX_PARTITION_HEARTBEAT_SECONDS": "11"}, []string{"outbox.partition_heartbeat", "OUTBOX_PARTITION_HEARTBEAT_SECONDS", "10s", "outbox.lease"}},
		{map[string]string{"OUTBOX_PARTITION_HEARTBEAT_SECONDS": "-1"}, []string{"outbox.partition_heartbeat", "OUTBOX_PARTITION_HEARTBEAT_SECONDS"}},
		{map[string]string{"OUTBOX_RECLAIM_INTERVAL_SECONDS": "-1"}, []string{"outbox.reclaim_interval", "OUTBOX_RECLAIM_INTERVAL_SECONDS"}},
		{map[string]string{"OUTBOX_MAX_PROCESSING_SECONDS": "10"}, []string{"outbox.max_processing", "OUTBOX_MAX_PROCESSING_SECONDS", "outbox.lease (OUTBOX_LEASE_SECONDS)"}},
		{map[string]string{"OUTBOX_MAX_ATTEMPTS": "0"}, []string{"outbox.max_attempts", "OUTBOX_MAX_ATTEMPTS"}},
		{map[string]string{"OUTBOX_BASE_BACKOFF_SECONDS": "0"}, []string{"outbox.base_backoff", "OUTBOX_BASE_BACKOFF_SECONDS"}},
		{map[string]string{"OUTBOX_MAX_BACKOFF_SECONDS": "0.5"}, []string{"outbox.max_backoff", "OUTBOX_MAX_BACKOFF_SECONDS", "outbox.base_backoff"}},
		{map[string]string{"OUTBOX_BACKOFF_JITTER": "some"}, []string{"outbox.jitter", "OUTBOX_BACKOFF_JITTER"}},
		{map[string]string{"OUTBOX_HTTP_PORT": "70000"}, []string{"http.port", "OUTBOX_HTTP_PORT"}},
		{map[string]string{"OUTBOX_MAX_MESSAGE_BYTES": "20000000"}, []string{"publish.max_message_bytes", "OUTBOX_MAX_MESSAGE_BYTES"}},
		{map[string]string{"OUTBOX_PUBLISH_COUNT_THRESHOLD": "5000"}, []string{"publish.count_threshold", "OUTBOX_PUBLISH_COUNT_THRESHOLD"}},
		{map[string]string{"OUTBOX_PUBLISH_DELAY_THRESHOLD": "-1"}, []string{"publish.delay_threshold", "OUTBOX_PUBLISH_DELAY_THRESHOLD"}},
		{map[string]string{"OUTBOX_RETENTION_SECONDS": "-3"}, []string{"outbox.retention", "OUTBOX_RETENTION_SECONDS"}},
		{map[string]string{"OUTBOX_STALL_AFTER_SECONDS": "-1"}, []string{"outbox.stall_after", "OUTBOX_STALL_AFTER_SECONDS"}},
		{map[string]string{"OUTBOX_REINDEX_BLOAT_FACTOR": "1.5"}, []string{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR", ">= 2"}},
		{map[string]string{"OUTBOX_REINDEX_BLOAT_FACTOR": "-4"}, []string{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR"}},
		{map[string]string{"OUTBOX_REINDEX_MIN_BYTES": "-1"}, []string{"outbox.reindex_min_bytes", "OUTBOX_REINDEX_MIN_BYTES"}},
		{map[string]string{"OUTBOX_GRACE_PERIOD_SECONDS": "0"}, []string{"outbox.drain_timeout", "OUTBOX_GRACE_PERIOD_SECONDS"}},
		{map[string]string{"OUTBOX_GRACE_PERIOD_SECONDS": "-1"}, []string{"outbox.drain_timeout (OUTBOX_GRACE_PERIOD_SECONDS) must be > 0"}},
		{map[string]string{"OUTBOX_REINDEX_MIN_BYTES": "0"}, []string{"outbox.reindex_min_bytes (OUTBOX_REINDEX_MIN_BYTES) is 0"}},
		{map[string]string{"OUTBOX_FETCH_COOLDOWN_SECONDS": "-1"}, []string{"outbox.fetch_cooldown", "OUTBOX_FETCH_COOLDOWN_SECONDS"}},
		{map[string]string{"OUTBOX_FETCH_COOLDOWN_SECONDS": "2"}, []string{"outbox.fetch_cooldown", "below outbox.poll_interval"}},
		{map[string]string{"LOG_LEVEL": "loud"}, []string{"log.level", "LOG_LEVEL"}},
		// An explicit 0 would silently be the 5s default (postgres.Config).
		{map[string]string{"DATABASE_CONNECT_TIMEOUT": "0"}, []string{"database.connect_timeout (DATABASE_CONNECT_TIMEOUT) is 0"}},
		{map[string]string{"DATABASE_SCHEMA": "Bad-Schema"}, []string{"database.schema"}},
	}
	for _, tc := range cases {
		env := baseEnv()
		for k, v := range tc.env {
			env[k] = v
		}
		_, err := load(t, "", env)
		if err == nil {
			t.Fatalf("%v: want an error", tc.env)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%v: error %q does not name %q", tc.env, err, w)
			}
		}
		if strings.Contains(err.Error(), "Options.") {
			t.Fatalf("%v: error %q names a relay.Options field, not the key", tc.env, err)
		}
	}
}

// TestOutOfRangeValuesAreReportedAsGiven: a duration beyond a
// time.Duration is refused with the value as given (it was wrapped into
// -2562047h47m16.85s), and a worker id is bounded.
func TestOutOfRangeValuesAreReportedAsGiven(t *testing.T) {
	for k, v := range map[string]string{
		"OUTBOX_POLL_INTERVAL_SECONDS": "1e12",
		"OUTBOX_WORKER_ID":             strings.Repeat("w", 5000),
		"OUTBOX_LEASE_SECONDS":         "-1e12",
	} {
		env := baseEnv()
		env[k] = v
		_, err := load(t, "", env)
		if err == nil || !strings.Contains(err.Error(), k) || strings.Contains(err.Error(), "-2562047h") {
			t.Errorf("%s=%.20s...: %v, want an error naming %s and not a wrapped-around duration", k, v, err, k)
		}
	}
}
