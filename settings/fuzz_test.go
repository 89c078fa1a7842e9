package settings_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/settings"
)

// fuzzed is a daemon configuration of every field kind Load fills: nested
// blocks, strings, bools, ints, floats, lists, durations, a zero-allowed
// number, and a Validate that fills defaults and names the offending key.
type fuzzed struct {
	Database struct {
		URL      string        `yaml:"url" env:"DATABASE_URL"`
		Schema   string        `yaml:"schema" env:"DATABASE_SCHEMA"`
		MaxConns int32         `yaml:"max_conns" env:"DATABASE_MAX_CONNS"`
		Timeout  time.Duration `yaml:"connect_timeout" env:"DATABASE_CONNECT_TIMEOUT"`
	} `yaml:"database"`
	Work struct {
		Concurrency int           `yaml:"concurrency" env:"WORK_CONCURRENCY"`
		Lease       time.Duration `yaml:"lease" env:"WORK_LEASE_SECONDS"`
		Retention   time.Duration `yaml:"retention" env:"WORK_RETENTION" zero:"allowed"`
		Ratio       float64       `yaml:"ratio" env:"WORK_RATIO"`
		Topics      []string      `yaml:"topics" env:"WORK_TOPICS"`
		Listen      bool          `yaml:"listen" env:"WORK_LISTEN"`
		Size        uint64        `yaml:"size" env:"WORK_SIZE"`
	} `yaml:"work"`
	LogLevel string `yaml:"log_level" env:"LOG_LEVEL"`
}

func defaults() fuzzed {
	var c fuzzed
	c.Database.Timeout = time.Duration(5e9)
	c.Work.Concurrency, c.Work.Lease, c.Work.Ratio = 4, time.Duration(30e9), 1.5
	c.LogLevel = "info"
	return c
}

func (c *fuzzed) Validate() error {
	switch {
	case c.Database.URL == "":
		return errors.New("database.url (DATABASE_URL) is required")
	case c.Work.Concurrency < 1:
		return fmt.Errorf("work.concurrency (WORK_CONCURRENCY) must be >= 1, got %d", c.Work.Concurrency)
	case c.Work.Lease < 0 || c.Work.Retention < 0:
		return errors.New("work.lease and work.retention must be >= 0")
	case c.LogLevel != "debug" && c.LogLevel != "info":
		return fmt.Errorf("log_level (LOG_LEVEL) %q is not debug or info", c.LogLevel)
	}
	return nil
}

// envVars are fuzzed's environment names, in field order.
var envVars = []string{"DATABASE_URL", "DATABASE_SCHEMA", "DATABASE_MAX_CONNS", "DATABASE_CONNECT_TIMEOUT",
	"WORK_CONCURRENCY", "WORK_LEASE_SECONDS", "WORK_RETENTION", "WORK_RATIO", "WORK_TOPICS", "WORK_LISTEN", "WORK_SIZE", "LOG_LEVEL"}

// FuzzLoad loads a YAML file and one environment override into a
// configuration (defaults first, as the daemons do). Every outcome is a
// valid configuration or an error of one of the two classes the daemons
// report (a YAML error naming the file, an invalid value naming its key),
// always wrapping ErrInvalid; never a panic.
func FuzzLoad(f *testing.F) {
	f.Add("database:\n  url: postgres://u@h/db\n  schema: orders\nwork:\n  concurrency: 8\n  lease: 10s\n  topics: [a, b]\n", uint8(0), "postgres://u@127.0.0.1:5432/db")
	f.Add("server: [1, 2", uint8(3), "abc")
	f.Add("work:\n  concurrency: -1\n", uint8(5), "-5s")
	f.Add("work:\n  lease: 0\n", uint8(6), "0")
	f.Add("work:\n  size: 104857600\n", uint8(7), "1e400")
	f.Add("bogus_key: 1\n", uint8(200), "")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml string, sel uint8, value string) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"DATABASE_URL": "postgres://u@127.0.0.1:5432/db"}
		env[envVars[int(sel)%len(envVars)]] = value
		dst := defaults()
		err := settings.LoadWithEnv(path, &dst, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err == nil {
			return
		}
		if !errors.Is(err, settings.ErrInvalid) {
			t.Fatalf("error %q does not wrap ErrInvalid", err)
		}
		if !strings.HasPrefix(err.Error(), "parsing config file ") && !strings.HasPrefix(err.Error(), "invalid configuration: ") {
			t.Fatalf("unclassified error %q", err)
		}
	})
}
