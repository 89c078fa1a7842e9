package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pconf "github.com/eventrelay/eventrelay/examples/catalog-demo/cmd/projector/config"
	"github.com/eventrelay/eventrelay/settings"
)

// load reads the shipped file with env, plus a DATABASE_URL unless env
// sets one (the file has none).
func load(env map[string]string) (pconf.Config, error) {
	if _, ok := env["DATABASE_URL"]; !ok {
		env["DATABASE_URL"] = "postgres://u@db:5432/x"
	}
	return loadFile(env)
}

func loadFile(env map[string]string) (pconf.Config, error) {
	c := pconf.Default()
	err := settings.LoadWithEnv("../../../configs/projector.yaml", &c, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return c, err
}

func TestShippedConfigLoadsWithEnvOverrides(t *testing.T) {
	c, err := load(map[string]string{
		"ELASTIC_URL":                        "http://127.0.0.1:9200",
		"PROJECTOR_BATCH_SIZE":               "1",
		"PROJECTOR_BATCH_LINGER":             "5ms",
		"PROJECTOR_EXACTLY_ONCE":             "true",
		"PROJECTOR_MAX_OUTSTANDING_MESSAGES": "50",
		"PROJECTOR_NUM_GOROUTINES":           "8",
		"PROJECTOR_VIDEOS_SUBSCRIPTION":      "videos-sub",
		"PROJECTOR_REQUIRE_ES_READY":         "true",
		"PUBSUB_EMULATOR_HOST":               "127.0.0.1:8085",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Batch.Size != 1 || c.Batch.Linger != 5*time.Millisecond || !c.Projector.Receive.ExactlyOnce ||
		c.Projector.Receive.MaxOutstandingMessages != 50 || c.Projector.Receive.NumGoroutines != 8 || c.Videos.Subscription != "videos-sub" ||
		!c.Search.RequireReady || c.PubSub.EmulatorHost != "127.0.0.1:8085" || c.Search.Alias != "videos" {
		t.Fatalf("overrides not applied: %+v", c)
	}
	// A StreamingPull response is packed up to max_outstanding_bytes and the
	// client refuses one over 20 MiB: the shipped value must stay below.
	if c.Projector.Receive.MaxOutstandingBytes > 10<<20 {
		t.Fatalf("receive.max_outstanding_bytes %d can wedge a subscription", c.Projector.Receive.MaxOutstandingBytes)
	}
	if c.Batch.Workers != 4 || c.Projector.Receive.MaxExtension != 10*time.Minute || c.HTTP.Port != 8082 || c.Projector.Receive.AckDeadline != 15*time.Second {
		t.Fatalf("file values/defaults not kept: %+v", c)
	}
}

// The shipped file holds no connection string: the README says database.url
// has no default.
func TestShippedConfigHasNoDatabaseURL(t *testing.T) {
	_, err := loadFile(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false"})
	if err == nil || !strings.Contains(err.Error(), "database.url (DATABASE_URL) is required") {
		t.Fatalf("shipped config without DATABASE_URL: error %v, want database.url required", err)
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_VIDEOS_ENABLED": "false"}, "videos.enabled"},
		{map[string]string{"ELASTIC_URL": "ftp://x"}, "elastic.url"},
		{map[string]string{"ELASTIC_URL": "http://es:9200", "ELASTIC_INDEX_ALIAS": "Videos!"}, "search.alias (ELASTIC_INDEX_ALIAS)"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_ACK_DEADLINE": "5s"}, "receive.ack_deadline (PROJECTOR_ACK_DEADLINE)"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_HTTP_PORT": "0"}, "http.port (PROJECTOR_HTTP_PORT)"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_RETRY_BACKOFF_MAX": "10ms"}, "batch.retry_backoff_max"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PUBSUB_PROJECT_ID": "X"}, "pubsub.project_id"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "DATABASE_URL": ""}, "database.url (DATABASE_URL)"},
		{map[string]string{"ELASTIC_URL": "http://es:9200", "PROJECTOR_SEARCH_SUBSCRIPTION": "catalog.video.projection-pg"}, "search.subscription"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_MAX_OUTSTANDING_BYTES": "104857600"}, "receive.max_outstanding_bytes (PROJECTOR_MAX_OUTSTANDING_BYTES) must be 1024..10485760"},
		{map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_RECEIVE_RETRY_MAX": "10ms"}, "receive.retry_max (PROJECTOR_RECEIVE_RETRY_MAX)"},
	}
	for _, tc := range cases {
		_, err := load(tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v does not name %q", tc.env, err, tc.want)
		}
	}
}

// An unset ack deadline is bounded too (not left to the library, whose
// adaptive deadline grows to minutes under an ordered backlog); an explicit
// 0 is refused rather than silently read as that default.
func TestAckDeadlineDefaultsTo15s(t *testing.T) {
	c, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Projector.Receive.AckDeadline; got != 15*time.Second {
		t.Fatalf("receive.ack_deadline = %s, want the 15s default", got)
	}
	_, err = load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_ACK_DEADLINE": "0s"})
	if err == nil || !strings.Contains(err.Error(), "receive.ack_deadline (PROJECTOR_ACK_DEADLINE) is 0") {
		t.Fatalf("PROJECTOR_ACK_DEADLINE=0s: %v, want a refusal naming the key", err)
	}
}

// Explicit zeros that the projector used to replace with defaults
// (PROJECTOR_BATCH_SIZE=0 became 100) are refused naming key and
// variable, from the environment and from the file; omitted keys still
// take the defaults.
func TestExplicitZeroIsRefused(t *testing.T) {
	for _, env := range []string{"PROJECTOR_BATCH_SIZE", "PROJECTOR_WORKERS", "PROJECTOR_BATCH_LINGER", "PROJECTOR_NUM_GOROUTINES",
		"PROJECTOR_MAX_OUTSTANDING_MESSAGES", "PROJECTOR_RETRY_BACKOFF_MIN", "ELASTIC_REQUEST_TIMEOUT"} {
		_, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", env: "0"})
		if err == nil || !strings.Contains(err.Error(), "("+env+") is 0") || !errors.Is(err, settings.ErrInvalid) {
			t.Errorf("%s=0: %v, want a configuration error naming it", env, err)
		}
	}
	for _, v := range []string{"-1", "-5"} {
		if _, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_BATCH_SIZE": v}); err == nil || !strings.Contains(err.Error(), "batch.size (PROJECTOR_BATCH_SIZE)") {
			t.Errorf("PROJECTOR_BATCH_SIZE=%s: %v", v, err)
		}
	}
	path := filepath.Join(t.TempDir(), "projector.yaml")
	if err := os.WriteFile(path, []byte("batch:\n  size: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := pconf.Default()
	err := settings.LoadWithEnv(path, &c, func(k string) (string, bool) {
		v, ok := map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "DATABASE_URL": "postgres://localhost/x"}[k]
		return v, ok
	})
	if err == nil || !strings.Contains(err.Error(), "batch.size (PROJECTOR_BATCH_SIZE) is 0") {
		t.Errorf("batch.size: 0 in the file: %v", err)
	}
	c, err = load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false"})
	if err != nil || c.Batch.Size != 100 || c.Batch.Workers != 4 || c.Projector.Receive.NumGoroutines != 4 {
		t.Fatalf("defaults: %+v %+v, %v", c.Batch, c.Projector.Receive, err)
	}
}

// Inbox retention: 7 days shipped, PROJECTOR_INBOX_RETENTION=0 keeps rows
// forever, an explicit 0 batch size and a negative age are refused naming
// the key.
func TestInboxRetentionKeys(t *testing.T) {
	c, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false"})
	if err != nil || c.InboxRetention.Age != 7*24*time.Hour || c.InboxRetention.Interval != time.Minute || c.InboxRetention.BatchSize != 5000 {
		t.Fatalf("shipped inbox retention: %+v, %v", c.InboxRetention, err)
	}
	c, err = load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_INBOX_RETENTION": "0s",
		"PROJECTOR_INBOX_RETENTION_INTERVAL": "10s", "PROJECTOR_INBOX_RETENTION_BATCH_SIZE": "100"})
	if err != nil || c.InboxRetention.Age != 0 || c.InboxRetention.Interval != 10*time.Second || c.InboxRetention.BatchSize != 100 {
		t.Fatalf("inbox retention overrides: %+v, %v", c.InboxRetention, err)
	}
	for env, want := range map[string]string{
		"PROJECTOR_INBOX_RETENTION":            "inbox_retention.age (PROJECTOR_INBOX_RETENTION) must be >= 0",
		"PROJECTOR_INBOX_RETENTION_BATCH_SIZE": "inbox_retention.batch_size (PROJECTOR_INBOX_RETENTION_BATCH_SIZE) must be 1..100000",
		"PROJECTOR_INBOX_RETENTION_INTERVAL":   "inbox_retention.interval (PROJECTOR_INBOX_RETENTION_INTERVAL) must be > 0",
	} {
		v := "-1"
		if env != "PROJECTOR_INBOX_RETENTION_BATCH_SIZE" {
			v = "-1h"
		}
		if _, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", env: v}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s=%s: %v, want %q", env, v, err, want)
		}
	}
	if _, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_INBOX_RETENTION_BATCH_SIZE": "0"}); err == nil ||
		!strings.Contains(err.Error(), "inbox_retention.batch_size (PROJECTOR_INBOX_RETENTION_BATCH_SIZE) is 0") {
		t.Errorf("PROJECTOR_INBOX_RETENTION_BATCH_SIZE=0: %v", err)
	}
}

// stall_after: 2m shipped, 0 turns stall detection off
// (projector.Options.StallAfterOff, as the publisher's outbox.stall_after),
// a negative value is refused naming the key; drain_timeout is also read
// under its former key shutdown_timeout.
func TestStallAfterZeroIsOff(t *testing.T) {
	c, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false"})
	if o := c.Options(nil, nil, nil); err != nil || o.StallAfter != 2*time.Minute || o.StallAfterOff {
		t.Fatalf("shipped stall_after: %s (off %v), %v", o.StallAfter, o.StallAfterOff, err)
	}
	c, err = load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_STALL_AFTER": "0"})
	if err != nil || !c.Options(nil, nil, nil).StallAfterOff {
		t.Fatalf("PROJECTOR_STALL_AFTER=0: projector.Options %+v, %v; want StallAfterOff", c.Options(nil, nil, nil), err)
	}
	if _, err := load(map[string]string{"PROJECTOR_SEARCH_ENABLED": "false", "PROJECTOR_STALL_AFTER": "-1s"}); err == nil ||
		!strings.Contains(err.Error(), "stall_after (PROJECTOR_STALL_AFTER) must be > 0") {
		t.Errorf("PROJECTOR_STALL_AFTER=-1s: %v, want a refusal naming the key", err)
	}
	path := filepath.Join(t.TempDir(), "projector.yaml")
	if err := os.WriteFile(path, []byte("shutdown_timeout: 12s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = pconf.Default()
	if err := settings.LoadWithEnv(path, &c, func(k string) (string, bool) { v, ok := base[k]; return v, ok }); err != nil || c.Projector.DrainTimeout != 12*time.Second {
		t.Errorf("shutdown_timeout: 12s: drain timeout %s, %v", c.Projector.DrainTimeout, err)
	}
}
