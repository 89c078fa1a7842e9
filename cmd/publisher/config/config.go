// Package config is cmd/publisher's configuration: configs/publisher.yaml
// over Default, then environment overrides (the OUTBOX_* names,
// DATABASE_URL, PUBSUB_PROJECT_ID, PUBSUB_EMULATOR_HOST), then Validate,
// whose errors name the offending key and its variable. Options converts
// it into the relay's options.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
)

// Config is the whole publisher configuration (configs/publisher.yaml).
type Config struct {
	Database Database       `yaml:"database"`
	PubSub   gpubsub.Config `yaml:"pubsub"`
	// Relay is the relay's options (the outbox section) but Schema
	// (database.schema) and Publish (the publish section); see
	// relay.Options for each key's meaning, default and range.
	Relay   relay.Options        `yaml:"outbox" skip:"publish"`
	Publish relay.PublishOptions `yaml:"publish"`
	HTTP    HTTP                 `yaml:"http"`
	Log     Log                  `yaml:"log"`
}

// Log configures the JSON logs.
type Log struct {
	// Level is debug, info, warn or error. At debug every published event
	// is logged.
	Level string `yaml:"level" env:"LOG_LEVEL"`
}

// SlogLevel is Level as a slog.Level (after Validate).
func (l Log) SlogLevel() slog.Level {
	var v slog.Level
	_ = v.UnmarshalText([]byte(l.Level))
	return v
}

// Database says where the outbox lives (the shared database block;
// max_conns 0 means concurrency + 4).
type Database = postgres.Settings

// ClaimSessionIdleLimit ends a publisher session that stays idle inside a
// transaction this long. Claim transactions last milliseconds; a replica
// frozen mid-claim (SIGSTOP, a stalled VM) would otherwise hold its
// partitions' claim locks, and so stop every replica that takes them over,
// for as long as it is frozen.
const ClaimSessionIdleLimit = 10 * time.Second

// PoolConfig returns the publisher's connection settings: the database
// block plus ClaimSessionIdleLimit.
func PoolConfig(d Database) postgres.Config {
	pc := d.Postgres()
	pc.IdleInTransactionTimeout = ClaimSessionIdleLimit
	return pc
}

// HTTP configures /healthz, /readyz and /metrics.
type HTTP struct {
	// Host to listen on (default all interfaces).
	Host string `yaml:"host" env:"OUTBOX_HTTP_HOST"`
	// Port to listen on.
	Port int `yaml:"port" env:"OUTBOX_HTTP_PORT"`
}

// Addr is host:port.
func (h HTTP) Addr() string { return fmt.Sprintf("%s:%d", h.Host, h.Port) }

// Default returns the configuration used for keys the file and the
// environment leave unset: the relay's defaults (relay.Options.WithDefaults)
// and the daemon's own. The relay's derived defaults stay unset, for the
// relay to derive from the values loaded: PartitionHeartbeat (a quarter
// of the lease) and WorkerID (hostname-pid).
func Default() Config {
	r := relay.Options{}.WithDefaults()
	r.PartitionHeartbeat, r.WorkerID, r.Logger = 0, "", nil
	return Config{
		Database: Database{ConnectTimeout: 5 * time.Second},
		Relay:    r,
		Publish:  r.Publish,
		HTTP:     HTTP{Port: 8081},
		Log:      Log{Level: "info"},
	}
}

// Load reads path (may be empty) over Default, applies the environment and
// validates.
func Load(path string) (Config, error) {
	c := Default()
	if err := settings.Load(path, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Validate fills derived defaults and checks every key; errors name it.
func (c *Config) Validate() error {
	pg := c.Database.Postgres()
	if err := pg.Validate("database"); err != nil {
		return err
	}
	c.Database.Schema = pg.Schema
	if c.Database.ConnectTimeout < 0 {
		return fmt.Errorf("database.connect_timeout (DATABASE_CONNECT_TIMEOUT) must be >= 0, got %s", c.Database.ConnectTimeout)
	}
	if err := c.PubSub.Validate("pubsub"); err != nil {
		return err
	}
	if err := c.Options().Validate(); err != nil {
		return keyError(err)
	}
	if c.Database.MaxConns == 0 {
		c.Database.MaxConns = int32(c.Relay.Concurrency) + 4
	}
	if c.HTTP.Port < 1 || c.HTTP.Port > 65535 {
		return fmt.Errorf("http.port (OUTBOX_HTTP_PORT) must be in 1..65535, got %d", c.HTTP.Port)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Log.Level)); err != nil {
		return fmt.Errorf("log.level (LOG_LEVEL) must be debug, info, warn or error, got %q", c.Log.Level)
	}
	return nil
}

// Options is the relay's options (without the logger, registry and
// health the daemon adds): the outbox section with the database's schema
// and the publish section.
func (c Config) Options() relay.Options {
	o := c.Relay
	o.Schema, o.Publish = c.Database.Schema, c.Publish
	return o
}

// keyError restates a relay.OptionError with the daemon's keys.
func keyError(err error) error {
	var oe *relay.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	at := func(field string) string {
		switch field = strings.TrimPrefix(field, "Options."); {
		case field == "Schema":
			return "Database.Schema"
		case strings.HasPrefix(field, "Publish."):
			return field
		}
		return "Relay." + field
	}
	return settings.OptionProblem(reflect.TypeOf(Config{}), at, oe.Field, oe.Problem)
}
