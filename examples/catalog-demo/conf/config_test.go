package conf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/settings"
)

const shipped = "../configs/catalog.yaml"

func load(t *testing.T, path string, env map[string]string) (conf.Config, error) {
	t.Helper()
	cfg := conf.Default()
	err := settings.LoadWithEnv(path, &cfg, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	return cfg, err
}

func TestShippedConfigWithEnvironment(t *testing.T) {
	cfg, err := load(t, shipped, map[string]string{
		"DATABASE_URL":      "postgres://u@db:5432/catalog",
		"CATALOG_HTTP_ADDR": "127.0.0.1:18000",
		"OUTBOX_NOTIFY":     "false",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.HTTPAddr != "127.0.0.1:18000" || cfg.Server.GRPCAddr != ":9000" || cfg.Server.Timeout != 10*time.Second {
		t.Errorf("server %+v", cfg.Server)
	}
	if cfg.Database.URL != "postgres://u@db:5432/catalog" || cfg.Database.Schema != "catalog" || cfg.Database.MaxConns != 20 {
		t.Errorf("database %+v", cfg.Database)
	}
	if cfg.Outbox.Notify || cfg.Outbox.Topic != "catalog.video.events" || cfg.Outbox.Instance == "" {
		t.Errorf("outbox %+v", cfg.Outbox)
	}
}

func TestDefaultsFillOmittedKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("database:\n  url: postgres://u@db/x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(t, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.HTTPAddr != ":8000" || cfg.Server.GRPCAddr != ":9000" || !cfg.Outbox.Notify || cfg.Outbox.ServiceName != "catalog" {
		t.Errorf("defaults lost: %+v", cfg)
	}
}

func TestInvalidConfigNamesTheKey(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://u@db/x"}
	cases := map[string]map[string]string{
		"database.url":       {},
		"server.http_addr":   {"CATALOG_HTTP_ADDR": "8000"},
		"server.grpc_addr":   {"CATALOG_GRPC_ADDR": "nohost"},
		"server.timeout":     {"CATALOG_REQUEST_TIMEOUT": "0"},
		"database.schema":    {"DATABASE_SCHEMA": "Bad-Name"},
		"database.max_conns": {"DATABASE_MAX_CONNS": "-1"},
		"outbox.topic":       {"OUTBOX_TOPIC": ""},
		"outbox.notify":      {"OUTBOX_NOTIFY": "sometimes"},
		"outbox.max_payload_bytes (OUTBOX_MAX_PAYLOAD_BYTES)": {"OUTBOX_MAX_PAYLOAD_BYTES": "-5"},
		// An explicit 0 was silently the 5s default (postgres.Config).
		"database.connect_timeout (DATABASE_CONNECT_TIMEOUT) is 0": {"DATABASE_CONNECT_TIMEOUT": "0"},
	}
	for key, env := range cases {
		merged := map[string]string{}
		if key != "database.url" {
			for k, v := range base {
				merged[k] = v
			}
		}
		for k, v := range env {
			merged[k] = v
		}
		if _, err := load(t, shipped, merged); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %v does not name the key", key, err)
		}
	}
}

// TestInvalidTopicIsAConfigurationError: a topic id Pub/Sub refuses is
// refused with the configuration, naming the key (exit status 2), not
// when the writer is built (exit status 1).
func TestInvalidTopicIsAConfigurationError(t *testing.T) {
	for _, topic := range []string{"goog.x", "bad topic", "ab", "9lives"} {
		_, err := load(t, shipped, map[string]string{"DATABASE_URL": "postgres://u@db/x", "OUTBOX_TOPIC": topic})
		if err == nil || !strings.Contains(err.Error(), "outbox.topic (OUTBOX_TOPIC)") || settings.ExitStatus(err) != settings.ExitInvalid {
			t.Errorf("OUTBOX_TOPIC=%q: %v (exit status %d), want a configuration error naming outbox.topic, exit status %d",
				topic, err, settings.ExitStatus(err), settings.ExitInvalid)
		}
	}
}
