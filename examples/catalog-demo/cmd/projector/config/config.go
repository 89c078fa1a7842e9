package config

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/elastic"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/settings"
)

// Config is the whole projector daemon configuration. The generic sections
// map to projector.Options (receive, batch, inbox_retention,
// shutdown_timeout); videos, search and elastic are the catalog's
// projections (see internal/catalog/conf).
type Config struct {
	HTTP     HTTP              `yaml:"http"`
	Database settings.Database `yaml:"database"`
	PubSub   settings.PubSub   `yaml:"pubsub"`
	Elastic  elastic.Config    `yaml:"elastic"`
	Receive  Receive           `yaml:"receive"`
	Batch    Batch             `yaml:"batch"`
	// InboxRetention deletes the inbox rows of every projection past an
	// age.
	InboxRetention InboxRetention `yaml:"inbox_retention"`
	Videos         catconf.Videos `yaml:"videos"`
	Search         catconf.Search `yaml:"search"`
	// ShutdownTimeout bounds the drain on SIGTERM (projector.Options.DrainTimeout).
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout" env:"PROJECTOR_SHUTDOWN_TIMEOUT"`
	// StallAfter: a projection holding messages and applying none for
	// this long is reported stalled (projector.Options.StallAfter; 0 turns
	// it off, as the publisher's outbox.stall_after).
	StallAfter time.Duration `yaml:"stall_after" env:"PROJECTOR_STALL_AFTER" zero:"allowed"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `yaml:"log_level" env:"PROJECTOR_LOG_LEVEL"`
}

// HTTP is the ops server (/healthz, /readyz, /metrics).
type HTTP struct {
	Port int `yaml:"port" env:"PROJECTOR_HTTP_PORT"`
}

// Addr is the listen address.
func (h HTTP) Addr() string { return fmt.Sprintf(":%d", h.Port) }

// Receive is projector.ReceiveOptions (see its fields for meaning, default
// and range).
type Receive struct {
	MaxOutstandingMessages int           `yaml:"max_outstanding_messages" env:"PROJECTOR_MAX_OUTSTANDING_MESSAGES"`
	MaxOutstandingBytes    int           `yaml:"max_outstanding_bytes" env:"PROJECTOR_MAX_OUTSTANDING_BYTES"`
	NumGoroutines          int           `yaml:"num_goroutines" env:"PROJECTOR_NUM_GOROUTINES"`
	MaxExtension           time.Duration `yaml:"max_extension" env:"PROJECTOR_MAX_EXTENSION"`
	AckDeadline            time.Duration `yaml:"ack_deadline" env:"PROJECTOR_ACK_DEADLINE"`
	RetryMin               time.Duration `yaml:"retry_min" env:"PROJECTOR_RECEIVE_RETRY_MIN"`
	RetryMax               time.Duration `yaml:"retry_max" env:"PROJECTOR_RECEIVE_RETRY_MAX"`
	ExactlyOnce            bool          `yaml:"exactly_once" env:"PROJECTOR_EXACTLY_ONCE"`
}

// Batch is projector.BatchOptions, the batching of every projection.
type Batch struct {
	Size            int           `yaml:"size" env:"PROJECTOR_BATCH_SIZE"`
	Linger          time.Duration `yaml:"linger" env:"PROJECTOR_BATCH_LINGER"`
	Workers         int           `yaml:"workers" env:"PROJECTOR_WORKERS"`
	Timeout         time.Duration `yaml:"timeout" env:"PROJECTOR_BATCH_TIMEOUT"`
	RetryBackoffMin time.Duration `yaml:"retry_backoff_min" env:"PROJECTOR_RETRY_BACKOFF_MIN"`
	RetryBackoffMax time.Duration `yaml:"retry_backoff_max" env:"PROJECTOR_RETRY_BACKOFF_MAX"`
}

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
	o, b, cat := projector.Options{}.WithDefaults(), projector.BatchOptions{}.WithDefaults(), catconf.DefaultProjections()
	r := o.Receive
	return Config{
		HTTP:     HTTP{Port: 8082},
		Database: catconf.Default().Database,
		PubSub:   settings.PubSub{ProjectID: "eventrelay-local"},
		Elastic:  cat.Elastic,
		Receive: Receive{
			MaxOutstandingMessages: r.MaxOutstandingMessages, MaxOutstandingBytes: r.MaxOutstandingBytes,
			NumGoroutines: r.NumGoroutines, MaxExtension: r.MaxExtension, AckDeadline: r.AckDeadline,
			RetryMin: r.RetryMin, RetryMax: r.RetryMax, ExactlyOnce: r.ExactlyOnce,
		},
		Batch: Batch{
			Size: b.Size, Linger: b.Linger, Workers: b.Workers, Timeout: b.Timeout,
			RetryBackoffMin: b.RetryBackoffMin, RetryBackoffMax: b.RetryBackoffMax,
		},
		InboxRetention: InboxRetention{Age: 7 * 24 * time.Hour,
			Interval: o.InboxRetentionInterval, BatchSize: o.InboxRetentionBatchSize},
		Videos:          cat.Videos,
		Search:          cat.Search,
		ShutdownTimeout: o.DrainTimeout,
		StallAfter:      o.StallAfter,
		LogLevel:        "info",
	}
}

// Options converts c into the projector's options; the caller adds what
// the process provides.
func (c *Config) Options(reg prometheus.Registerer, h *health.Health, logger *slog.Logger) projector.Options {
	r := c.Receive
	return projector.Options{
		Schema: c.Database.Schema,
		Receive: projector.ReceiveOptions{
			MaxOutstandingMessages: r.MaxOutstandingMessages, MaxOutstandingBytes: r.MaxOutstandingBytes,
			NumGoroutines: r.NumGoroutines, MaxExtension: r.MaxExtension, AckDeadline: r.AckDeadline,
			RetryMin: r.RetryMin, RetryMax: r.RetryMax, ExactlyOnce: r.ExactlyOnce,
		},
		DrainTimeout:            c.ShutdownTimeout,
		StallAfter:              stallAfter(c.StallAfter),
		InboxRetentionInterval:  c.InboxRetention.Interval,
		InboxRetentionBatchSize: c.InboxRetention.BatchSize,
		Logger:                  logger, Registerer: reg, Health: h,
	}
}

// Batching converts the batch section into every projection's batching.
func (c *Config) Batching() projector.BatchOptions {
	b := c.Batch
	return projector.BatchOptions{
		Size: b.Size, Linger: b.Linger, Workers: b.Workers, Timeout: b.Timeout,
		RetryBackoffMin: b.RetryBackoffMin, RetryBackoffMax: b.RetryBackoffMax,
	}
}

// Catalog is the catalog's part: its projections and Elasticsearch.
func (c *Config) Catalog() catconf.Projections {
	return catconf.Projections{Videos: c.Videos, Search: c.Search, Elastic: c.Elastic}
}

// keys names the projector's options as the keys that set them.
var keys = map[string]string{
	"Options.Receive.MaxOutstandingMessages": "receive.max_outstanding_messages (PROJECTOR_MAX_OUTSTANDING_MESSAGES)",
	"Options.Receive.MaxOutstandingBytes":    "receive.max_outstanding_bytes (PROJECTOR_MAX_OUTSTANDING_BYTES)",
	"Options.Receive.NumGoroutines":          "receive.num_goroutines (PROJECTOR_NUM_GOROUTINES)",
	"Options.Receive.MaxExtension":           "receive.max_extension (PROJECTOR_MAX_EXTENSION)",
	"Options.Receive.AckDeadline":            "receive.ack_deadline (PROJECTOR_ACK_DEADLINE)",
	"Options.Receive.RetryMin":               "receive.retry_min (PROJECTOR_RECEIVE_RETRY_MIN)",
	"Options.Receive.RetryMax":               "receive.retry_max (PROJECTOR_RECEIVE_RETRY_MAX)",
	"Options.DrainTimeout":                   "shutdown_timeout (PROJECTOR_SHUTDOWN_TIMEOUT)",
	"Options.StallAfter":                     "stall_after (PROJECTOR_STALL_AFTER)",
	"Options.InboxRetentionInterval":         "inbox_retention.interval (PROJECTOR_INBOX_RETENTION_INTERVAL)",
	"Options.InboxRetentionBatchSize":        "inbox_retention.batch_size (PROJECTOR_INBOX_RETENTION_BATCH_SIZE)",
	"Projection.Batching.Size":               "batch.size (PROJECTOR_BATCH_SIZE)",
	"Projection.Batching.Linger":             "batch.linger (PROJECTOR_BATCH_LINGER)",
	"Projection.Batching.Workers":            "batch.workers (PROJECTOR_WORKERS)",
	"Projection.Batching.Timeout":            "batch.timeout (PROJECTOR_BATCH_TIMEOUT)",
	"Projection.Batching.RetryBackoffMin":    "batch.retry_backoff_min (PROJECTOR_RETRY_BACKOFF_MIN)",
	"Projection.Batching.RetryBackoffMax":    "batch.retry_backoff_max (PROJECTOR_RETRY_BACKOFF_MAX)",
}

// keyed renames the option an *projector.OptionError names to its key.
func keyed(err error) error {
	var oe *projector.OptionError
	if errors.As(err, &oe) {
		if k, ok := keys[oe.Option]; ok {
			return fmt.Errorf("%s %s", k, oe.Problem)
		}
	}
	return err
}

// stallAfter is projector.Options.StallAfter for the key stall_after,
// whose 0 turns stall detection off (the option's negative).
func stallAfter(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
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
	if err := c.Batching().Validate(); err != nil {
		return keyed(err)
	}
	if c.StallAfter < 0 {
		return fmt.Errorf("stall_after (PROJECTOR_STALL_AFTER) must be >= 0 (0: no stall detection), got %s", c.StallAfter)
	}
	if c.InboxRetention.Age < 0 {
		return fmt.Errorf("inbox_retention.age (PROJECTOR_INBOX_RETENTION) must be >= 0 (0 keeps inbox rows forever), got %s", c.InboxRetention.Age)
	}
	cat := c.Catalog()
	if err := cat.Validate(); err != nil {
		return err
	}
	c.Elastic = cat.Elastic
	if c.ShutdownTimeout < time.Second {
		return fmt.Errorf("shutdown_timeout (PROJECTOR_SHUTDOWN_TIMEOUT) must be >= 1s, got %s", c.ShutdownTimeout)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level (PROJECTOR_LOG_LEVEL) must be debug, info, warn or error, got %q", c.LogLevel)
	}
	return nil
}
