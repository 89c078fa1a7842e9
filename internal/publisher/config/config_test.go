package config

import (
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
)

func baseEnv() map[string]string {
	return map[string]string{
		"DATABASE_URL":      "postgres://u@127.0.0.1:5432/db",
		"PUBSUB_PROJECT_ID": "eventrelay-test",
	}
}

func load(t *testing.T, path string, env map[string]string) (Config, error) {
	t.Helper()
	c := Default()
	err := conf.LoadWithEnv(path, &c, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return c, err
}

// TestShippedConfigLoads: configs/publisher.yaml with the required
// environment is valid, and the seeds' variable names override it.
func TestShippedConfigLoads(t *testing.T) {
	env := baseEnv()
	env["OUTBOX_CONCURRENCY"] = "8"
	env["OUTBOX_LEASE_SECONDS"] = "45"
	env["OUTBOX_POLL_INTERVAL_SECONDS"] = "0.25"
	env["OUTBOX_HTTP_PORT"] = "9100"
	env["OUTBOX_WORKER_ID"] = "replica-a"
	c, err := load(t, "../../../configs/publisher.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Outbox.Concurrency != 8 || c.Outbox.Lease.D() != 45*time.Second || c.Outbox.PollInterval.D() != 250*time.Millisecond ||
		c.HTTP.Addr() != ":9100" || c.Outbox.WorkerID != "replica-a" || c.Database.MaxConns != 12 ||
		c.Publish.ReadyTopic != "catalog.video.events" || c.Database.Schema != "catalog" ||
		c.Outbox.PartitionHeartbeat.D() != 45*time.Second/4 {
		t.Fatalf("loaded %+v", c)
	}
}

func TestDefaultWorkerIDIsHostnamePid(t *testing.T) {
	env := baseEnv()
	env["DATABASE_SCHEMA"] = "items" // no file: the schema has no other source
	c, err := load(t, "", env)
	if err != nil {
		t.Fatal(err)
	}
	if c.Outbox.WorkerID == "" || !strings.Contains(c.Outbox.WorkerID, "-") {
		t.Fatalf("worker id %q, want hostname-pid", c.Outbox.WorkerID)
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
		{map[string]string{"OUTBOX_CONCURRENCY": "lots"}, []string{"outbox.concurrency", "OUTBOX_CONCURRENCY"}},
		{map[string]string{"OUTBOX_BULK_SIZE": "-5"}, []string{"outbox.bulk_size", "OUTBOX_BULK_SIZE"}},
		{map[string]string{"OUTBOX_POLL_INTERVAL_SECONDS": "0"}, []string{"outbox.poll_interval", "OUTBOX_POLL_INTERVAL_SECONDS"}},
		{map[string]string{"OUTBOX_LEASE_SECONDS": "soon"}, []string{"outbox.lease", "OUTBOX_LEASE_SECONDS"}},
		{map[string]string{"OUTBOX_LEASE_SECONDS": "0.1"}, []string{"outbox.lease", "OUTBOX_LEASE_SECONDS"}},
		{map[string]string{"OUTBOX_PARTITION_HEARTBEAT_SECONDS": "11"}, []string{"outbox.partition_heartbeat", "OUTBOX_PARTITION_HEARTBEAT_SECONDS", "10s", "outbox.lease"}},
		{map[string]string{"OUTBOX_PARTITION_HEARTBEAT_SECONDS": "-1"}, []string{"outbox.partition_heartbeat", "OUTBOX_PARTITION_HEARTBEAT_SECONDS"}},
		{map[string]string{"OUTBOX_RECLAIM_INTERVAL_SECONDS": "-1"}, []string{"outbox.reclaim_interval", "OUTBOX_RECLAIM_INTERVAL_SECONDS"}},
		{map[string]string{"OUTBOX_MAX_PROCESSING_SECONDS": "10"}, []string{"outbox.max_processing", "OUTBOX_MAX_PROCESSING_SECONDS"}},
		{map[string]string{"OUTBOX_MAX_ATTEMPTS": "0"}, []string{"outbox.max_attempts", "OUTBOX_MAX_ATTEMPTS"}},
		{map[string]string{"OUTBOX_BASE_BACKOFF_SECONDS": "0"}, []string{"outbox.base_backoff", "OUTBOX_BASE_BACKOFF_SECONDS"}},
		{map[string]string{"OUTBOX_MAX_BACKOFF_SECONDS": "0.5"}, []string{"outbox.max_backoff", "OUTBOX_MAX_BACKOFF_SECONDS"}},
		{map[string]string{"OUTBOX_BACKOFF_JITTER": "some"}, []string{"outbox.jitter", "OUTBOX_BACKOFF_JITTER"}},
		{map[string]string{"OUTBOX_HTTP_PORT": "70000"}, []string{"http.port", "OUTBOX_HTTP_PORT"}},
		{map[string]string{"OUTBOX_MAX_MESSAGE_BYTES": "20000000"}, []string{"publish.max_message_bytes", "OUTBOX_MAX_MESSAGE_BYTES"}},
		{map[string]string{"OUTBOX_RETENTION_SECONDS": "-3"}, []string{"outbox.retention", "OUTBOX_RETENTION_SECONDS"}},
		{map[string]string{"OUTBOX_REINDEX_BLOAT_FACTOR": "1.5"}, []string{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR", ">= 2"}},
		{map[string]string{"OUTBOX_REINDEX_BLOAT_FACTOR": "-4"}, []string{"outbox.reindex_bloat_factor", "OUTBOX_REINDEX_BLOAT_FACTOR"}},
		{map[string]string{"OUTBOX_REINDEX_MIN_BYTES": "-1"}, []string{"outbox.reindex_min_bytes", "OUTBOX_REINDEX_MIN_BYTES"}},
		{map[string]string{"OUTBOX_GRACE_PERIOD_SECONDS": "0"}, []string{"outbox.grace_period", "OUTBOX_GRACE_PERIOD_SECONDS"}},
		{map[string]string{"OUTBOX_FETCH_COOLDOWN_SECONDS": "-1"}, []string{"outbox.fetch_cooldown", "OUTBOX_FETCH_COOLDOWN_SECONDS"}},
		{map[string]string{"OUTBOX_FETCH_COOLDOWN_SECONDS": "2"}, []string{"outbox.fetch_cooldown", "below outbox.poll_interval"}},
		{map[string]string{"LOG_LEVEL": "loud"}, []string{"log.level", "LOG_LEVEL"}},
		// An explicit 0 was silently the 5s default (postgres.Config).
		{map[string]string{"DATABASE_CONNECT_TIMEOUT": "0"}, []string{"database.connect_timeout (DATABASE_CONNECT_TIMEOUT) is 0"}},
		{map[string]string{"DATABASE_SCHEMA": "Bad-Schema"}, []string{"database.schema"}},
		// No default schema: the publisher works in the one it is given.
		{map[string]string{"DATABASE_SCHEMA": ""}, []string{"database.schema (DATABASE_SCHEMA) is required"}},
	}
	for _, tc := range cases {
		env := baseEnv()
		env["DATABASE_SCHEMA"] = "items" // no file: the schema has no other source
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
	}
}

// 0 is a value of its own for the keys that say so (retention 0 disables
// deletion, a bundle delay of 0 sends at once, a bloat factor of 0 turns
// index rebuilds off, min bytes 0 is no minimum), not a default to refuse.
func TestZeroWhereZeroMeansSomething(t *testing.T) {
	env := baseEnv()
	env["OUTBOX_RETENTION_SECONDS"] = "0"
	env["OUTBOX_PUBLISH_DELAY_THRESHOLD"] = "0"
	env["OUTBOX_FETCH_COOLDOWN_SECONDS"] = "0"
	env["OUTBOX_REINDEX_BLOAT_FACTOR"] = "0"
	env["OUTBOX_REINDEX_MIN_BYTES"] = "0"
	c, err := load(t, "../../../configs/publisher.yaml", env)
	if err != nil || c.Outbox.Retention != 0 || c.Publish.DelayThreshold != 0 || c.Outbox.FetchCooldown != 0 || c.Outbox.ReindexBloatFactor != 0 || c.Outbox.ReindexMinBytes != 0 {
		t.Fatalf("retention %s, delay threshold %s, fetch cooldown %s, reindex factor %v, min bytes %d, %v", c.Outbox.Retention, c.Publish.DelayThreshold,
			c.Outbox.FetchCooldown, c.Outbox.ReindexBloatFactor, c.Outbox.ReindexMinBytes, err)
	}
}
