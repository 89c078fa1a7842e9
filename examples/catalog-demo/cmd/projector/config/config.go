package config

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/elastic"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/settings"
)

// Config is the whole projector daemon configuration. Projector and Batch
// are the projector's options, read under their own keys (receive,
// drain_timeout, stall_after, subscription_check_interval; batch); videos,
// search and elastic are the catalog's projections (see
// internal/catalog/conf).
type Config struct {
	HTTP     HTTP              `yaml:"http"`
	Database settings.Database `yaml:"database"`
	PubSub   settings.PubSub   `yaml:"pubsub"`
	Elastic  elastic.Config    `yaml:"elastic"`
	// Projector is projector.Options but its inbox retention keys (the
	// inbox_retention section) and Schema (database.schema).
	Projector projector.Options `yaml:",inline" skip:"inbox_retention_interval,inbox_retention_batch_size"`
	// Batch is every projection's batching.
	Batch projector.BatchOptions `yaml:"batch"`
	// InboxRetention deletes the inbox rows of every projection past an
	// age.
	InboxRetention InboxRetention `yaml:"inbox_retention"`
	Videos         catconf.Videos `yaml:"videos"`
	Search         catconf.Search `yaml:"search"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level" env:"PROJECTOR_LOG_LEVEL"`
}

// HTTP is the ops server (/healthz, /readyz, /metrics).
type HTTP struct {
	Port int `yaml:"port" env:"PROJECTOR_HTTP_PORT"`
}

// Addr is the listen address.
func (h HTTP) Addr() string { return fmt.Sprintf(":%d", h.Port) }

// InboxRetention is Projection.InboxRetention (Age, 0 keeps rows forever)
// and Options.InboxRetentionInterval and InboxRetentionBatchSize.
type InboxRetention struct {
	Age       time.Duration `yaml:"age" env:"PROJECTOR_INBOX_RETENTION" zero:"allowed"`
	Interval  time.Duration `yaml:"interval" env:"PROJECTOR_INBOX_RETENTION_INTERVAL"`
	BatchSize int           `yaml:"batch_size" env:"PROJECTOR_INBOX_RETENTION_BATCH_SIZE"`
}

// Default returns the configuration used for keys the file and the
// environment leave unset: the projector's defaults, the catalog's
// projections and inbox rows kept 7 days (the subscriptions' message
// retention in configs/pubsub.yaml, so every redelivery or seek Pub/Sub
// can still make is absorbed by the inbox; an older replay reaches the
// handlers and is skipped as stale by the read models' version guards).
func Default() Config {
	o, cat := projector.Options{}.WithDefaults(), catconf.DefaultProjections()
	return Config{
		HTTP:      HTTP{Port: 8082},
		Database:  catconf.Default().Database,
		PubSub:    settings.PubSub{ProjectID: "eventrelay-local"},
		Elastic:   cat.Elastic,
		Projector: o,
		Batch:     projector.BatchOptions{}.WithDefaults(),
		InboxRetention: InboxRetention{Age: 7 * 24 * time.Hour,
			Interval: o.InboxRetentionInterval, BatchSize: o.InboxRetentionBatchSize},
		Videos:   cat.Videos,
		Search:   cat.Search,
		LogLevel: "info",
	}
}

// Options is the projector's options; the caller adds what the process
// provides.
func (c *Config) Options(reg prometheus.Registerer, h *health.Health, logger *slog.Logger) projector.Options {
	o := c.Projector
	o.Schema = c.Database.Schema
	o.InboxRetentionInterval, o.InboxRetentionBatchSize = c.InboxRetention.Interval, c.InboxRetention.BatchSize
	o.Registerer, o.Health, o.Logger = reg, h, logger
	return o
}

// Catalog is the catalog's part: its projections and Elasticsearch.
func (c *Config) Catalog() catconf.Projections {
	return catconf.Projections{Videos: c.Videos, Search: c.Search, Elastic: c.Elastic}
}

// keyed restates a *projector.OptionError with the daemon's keys.
func keyed(err error) error {
	var oe *projector.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	at := func(field string) string {
		switch field {
		case "Options.InboxRetentionInterval":
			return "InboxRetention.Interval"
		case "Options.InboxRetentionBatchSize":
			return "InboxRetention.BatchSize"
		}
		if f, ok := strings.CutPrefix(field, "Projection.Batching."); ok {
			return "Batch." + f
		}
		return "Projector." + strings.TrimPrefix(field, "Options.")
	}
	return settings.OptionProblem(reflect.TypeOf(Config{}), at, oe.Field, oe.Problem)
}

// Validate checks every key and fills derived values.
func (c *Config) Validate() error {
	if c.HTTP.Port < 1 || c.HTTP.Port > 65535 {
		return fmt.Errorf("http.port (PROJECTOR_HTTP_PORT) must be 1..65535, got %d", c.HTTP.Port)
	}
	pg := c.Database.Postgres()
	if err := pg.Validate("database"); err != nil {
		return err
	}
	c.Database.Schema = pg.Schema
	if err := c.PubSub.Validate("pubsub"); err != nil {
		return err
	}
	if err := c.Options(nil, nil, nil).Validate(); err != nil {
		return keyed(err)
	}
	if err := c.Batch.Validate(); err != nil {
		return keyed(err)
	}
	if c.InboxRetention.Age < 0 {
		return fmt.Errorf("inbox_retention.age (PROJECTOR_INBOX_RETENTION) must be >= 0 (0 keeps inbox rows forever), got %s", c.InboxRetention.Age)
	}
	cat := c.Catalog()
	if err := cat.Validate(); err != nil {
		return err
	}
	c.Elastic = cat.Elastic
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level (PROJECTOR_LOG_LEVEL) must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return nil
}
