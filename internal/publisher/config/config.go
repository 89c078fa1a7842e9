package config

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// Config is the whole publisher configuration (configs/publisher.yaml).
type Config struct {
	Database Database       `yaml:"database"`
	PubSub   gpubsub.Config `yaml:"pubsub"`
	Outbox   Outbox         `yaml:"outbox"`
	Publish  Publish        `yaml:"publish"`
	HTTP     HTTP           `yaml:"http"`
	Log      Log            `yaml:"log"`
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

// Outbox configures claiming, retries and retention.
type Outbox struct {
	// WorkerID names this replica in locked_by (default hostname-pid).
	WorkerID string `yaml:"worker_id" env:"OUTBOX_WORKER_ID"`
	// Concurrency is the number of claimed batches in flight per replica.
	Concurrency int `yaml:"concurrency" env:"OUTBOX_CONCURRENCY"`
	// BulkSize is the maximum number of rows per claim.
	BulkSize int `yaml:"bulk_size" env:"OUTBOX_BULK_SIZE"`
	// PollInterval is the fallback when no NOTIFY arrives.
	PollInterval conf.Duration `yaml:"poll_interval" env:"OUTBOX_POLL_INTERVAL_SECONDS"`
	// Listen turns on LISTEN eventrelay_outbox (wake within milliseconds).
	Listen bool `yaml:"listen" env:"OUTBOX_LISTEN"`
	// FetchCooldown is the least time between the starts of two claims
	// that were not forced by a full batch: wake-ups within it are
	// coalesced into one claim, and while claims keep returning rows the
	// relay claims again after it without a NOTIFY (writers skip theirs,
	// see outbox_wakeups). 0 claims on every wake-up.
	FetchCooldown conf.Duration `yaml:"fetch_cooldown" env:"OUTBOX_FETCH_COOLDOWN_SECONDS" zero:"allowed"`
	// Lease is how long a claim is valid without extension.
	Lease conf.Duration `yaml:"lease" env:"OUTBOX_LEASE_SECONDS"`
	// PartitionHeartbeat is how often a replica renews its membership and
	// its outbox partitions' leases (which last lease - heartbeat) and
	// rebalances them (0: lease/4; at most lease/3).
	PartitionHeartbeat conf.Duration `yaml:"partition_heartbeat" env:"OUTBOX_PARTITION_HEARTBEAT_SECONDS" zero:"allowed"`
	// ReclaimInterval is how often expired claims are taken over.
	ReclaimInterval conf.Duration `yaml:"reclaim_interval" env:"OUTBOX_RECLAIM_INTERVAL_SECONDS"`
	// MaxProcessing bounds a claim even when its lease keeps being extended.
	MaxProcessing conf.Duration `yaml:"max_processing" env:"OUTBOX_MAX_PROCESSING_SECONDS"`
	// MaxAttempts is the number of publish attempts before a row fails with
	// max_attempts_exceeded.
	MaxAttempts int `yaml:"max_attempts" env:"OUTBOX_MAX_ATTEMPTS"`
	// BaseBackoff and MaxBackoff bound the retry delay
	// min(max, base * 2^attempts), jittered.
	BaseBackoff conf.Duration `yaml:"base_backoff" env:"OUTBOX_BASE_BACKOFF_SECONDS"`
	MaxBackoff  conf.Duration `yaml:"max_backoff" env:"OUTBOX_MAX_BACKOFF_SECONDS"`
	// Jitter is "equal" (delay in [d/2, d]) or "full" (delay in [0, d]).
	Jitter string `yaml:"jitter" env:"OUTBOX_BACKOFF_JITTER"`
	// StatsInterval is how often the lag/age/stuck gauges are refreshed.
	StatsInterval conf.Duration `yaml:"stats_interval" env:"OUTBOX_STATS_INTERVAL_SECONDS"`
	// GracePeriod bounds the drain on SIGTERM.
	GracePeriod conf.Duration `yaml:"grace_period" env:"OUTBOX_GRACE_PERIOD_SECONDS"`
	// Retention keeps published rows this long (0 disables deletion).
	Retention conf.Duration `yaml:"retention" env:"OUTBOX_RETENTION_SECONDS" zero:"allowed"`
	// RetentionInterval is how often old published rows are deleted.
	RetentionInterval conf.Duration `yaml:"retention_interval" env:"OUTBOX_RETENTION_INTERVAL_SECONDS"`
	// RetentionBatchSize bounds each DELETE.
	RetentionBatchSize int `yaml:"retention_batch_size" env:"OUTBOX_RETENTION_BATCH_SIZE"`
	// ReindexBloatFactor: after each retention round, an outbox index
	// whose size (at its last VACUUM/ANALYZE) is more than this many times
	// what its live entries need is rebuilt with REINDEX CONCURRENTLY, by
	// one replica at a time (0 disables).
	ReindexBloatFactor float64 `yaml:"reindex_bloat_factor" env:"OUTBOX_REINDEX_BLOAT_FACTOR" zero:"allowed"`
	// ReindexMinBytes: indexes smaller than this are never rebuilt.
	ReindexMinBytes int64 `yaml:"reindex_min_bytes" env:"OUTBOX_REINDEX_MIN_BYTES" zero:"allowed"`
}

// MinReindexBloatFactor is the smallest non-zero ReindexBloatFactor: a
// healthy index measures 1.0 to 1.4 times its estimate (random keys fill
// pages to about 70%, and the estimate errs), and below 2 it would be
// rebuilt again and again.
const MinReindexBloatFactor = 2

// Defaults of the index rebuild, from measurements: a 300,000-row wave
// claimed, published and deleted left the outbox's indexes at 14 to 1,500
// times their estimate, while indexes whose rows were all live after one
// status change each measured 2 to 3 times (1.0 to 1.3 freshly built). In
// the bench's 1M-event wave (scenario scale) the rebuild took the indexes
// from 621.8 MB back to 16.6 MB (34.0 MB before the wave); the one left
// under 8 MiB held 2.6 MB.
const (
	DefaultReindexBloatFactor = 4
	DefaultReindexMinBytes    = 8 << 20
)

// StopTimeout is the whole SIGTERM drain: the grace period for in-flight
// batches plus one lease for the last outcome writes. The daemon's Kratos
// stop timeout and deploy/'s termination grace both derive from it.
func (o Outbox) StopTimeout() time.Duration { return o.GracePeriod.D() + o.Lease.D() }

// DefaultFetchCooldown is FetchCooldown's default. At 500 commits/s it
// makes claims of about 20 events; an event waits at most this long for
// its claim under load, and not at all after an idle period (measured:
// README "Wake-ups and the writers' commits").
const DefaultFetchCooldown = 40 * time.Millisecond

// Publish configures the Pub/Sub side.
type Publish struct {
	// Topics routes aggregate types to topic ids, overriding the row's
	// topic. Unlisted aggregate types use the row's topic.
	Topics map[string]string `yaml:"topics"`
	// MaxMessageBytes fails larger messages with message_too_large without
	// calling Pub/Sub (Pub/Sub's limit is 10 MB).
	MaxMessageBytes int `yaml:"max_message_bytes" env:"OUTBOX_MAX_MESSAGE_BYTES"`
	// Timeout bounds one publish (the client retries transient errors
	// within it).
	Timeout conf.Duration `yaml:"timeout" env:"OUTBOX_PUBLISH_TIMEOUT_SECONDS"`
	// The client library bundles per ordering key (Cloud Pub/Sub takes one
	// key per Publish request): DelayThreshold is how long a key's bundle
	// waits for more messages, CountThreshold the most messages per
	// request (1..1000).
	DelayThreshold conf.Duration `yaml:"delay_threshold" env:"OUTBOX_PUBLISH_DELAY_THRESHOLD" zero:"allowed"`
	CountThreshold int           `yaml:"count_threshold" env:"OUTBOX_PUBLISH_COUNT_THRESHOLD"`
	// MaxInflightRequests is how many Publish requests (each of one
	// ordering key) are in flight at once per topic: the library's
	// NumGoroutines. Throughput per topic is at most this many requests
	// per round trip.
	MaxInflightRequests int `yaml:"max_inflight_requests" env:"OUTBOX_PUBLISH_MAX_INFLIGHT_REQUESTS"`
	// ReadyTopic is probed by /readyz (GetTopic). Empty: list topics.
	ReadyTopic string `yaml:"ready_topic" env:"OUTBOX_READY_TOPIC"`
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

// Settings are the client library's publish settings of these keys.
func (p Publish) Settings() pubsub.PublishSettings {
	s := pubsub.DefaultPublishSettings
	s.DelayThreshold = p.DelayThreshold.D()
	s.CountThreshold = p.CountThreshold
	s.NumGoroutines = p.MaxInflightRequests
	s.Timeout = p.Timeout.D()
	return s
}

// MaxPubSubMessageBytes is Pub/Sub's limit for one message.
const MaxPubSubMessageBytes = 10_000_000

// Default returns the configuration used for keys the file and the
// environment leave unset.
func Default() Config {
	return Config{
		Database: Database{ConnectTimeout: conf.Duration(5 * time.Second)},
		Outbox: Outbox{
			Concurrency:        4,
			BulkSize:           500,
			PollInterval:       conf.Duration(time.Second),
			Listen:             true,
			FetchCooldown:      conf.Duration(DefaultFetchCooldown),
			Lease:              conf.Duration(30 * time.Second),
			ReclaimInterval:    conf.Duration(10 * time.Second),
			MaxProcessing:      conf.Duration(5 * time.Minute),
			MaxAttempts:        12,
			BaseBackoff:        conf.Duration(time.Second),
			MaxBackoff:         conf.Duration(5 * time.Minute),
			Jitter:             "equal",
			StatsInterval:      conf.Duration(10 * time.Second),
			GracePeriod:        conf.Duration(20 * time.Second),
			Retention:          conf.Duration(72 * time.Hour),
			RetentionInterval:  conf.Duration(time.Minute),
			RetentionBatchSize: 5000,
			ReindexBloatFactor: DefaultReindexBloatFactor,
			ReindexMinBytes:    DefaultReindexMinBytes,
		},
		Publish: Publish{
			MaxMessageBytes: MaxPubSubMessageBytes,
			Timeout:         conf.Duration(20 * time.Second),
			DelayThreshold:  conf.Duration(2 * time.Millisecond),
			CountThreshold:  100,
			// Measured: bench/README "publisher drain" at 15 ms round trip.
			MaxInflightRequests: 256,
		},
		HTTP: HTTP{Port: 8081},
		Log:  Log{Level: "info"},
	}
}

// Load reads path (may be empty) over Default, applies the environment and
// validates.
func Load(path string) (Config, error) {
	c := Default()
	if err := conf.Load(path, &c); err != nil {
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
	if c.Database.ConnectTimeout.D() < 0 {
		return fmt.Errorf("database.connect_timeout (DATABASE_CONNECT_TIMEOUT) must be >= 0, got %s", c.Database.ConnectTimeout)
	}
	if err := c.PubSub.Validate("pubsub"); err != nil {
		return err
	}
	if err := c.Outbox.Validate(); err != nil {
		return err
	}
	if c.Database.MaxConns == 0 {
		c.Database.MaxConns = int32(c.Outbox.Concurrency) + 4
	}
	if err := c.Publish.Validate(); err != nil {
		return err
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

// Namer names a field (by its Go name) of Outbox or Publish in errors: the
// daemon names its keys, an embedding caller its own option fields.
type Namer func(field string) string

// KeyNamer names fields of the struct type of v by their daemon keys:
// "<section>.<yaml key> (<ENV>)".
func KeyNamer(section string, v any) Namer {
	t := reflect.TypeOf(v)
	return func(field string) string {
		f, ok := t.FieldByName(field)
		if !ok {
			return section + "." + field
		}
		key := section + "." + f.Tag.Get("yaml")
		if env := f.Tag.Get("env"); env != "" {
			key += " (" + env + ")"
		}
		return key
	}
}

// Validate fills the worker id and checks the outbox keys.
func (o *Outbox) Validate() error { return o.Check(KeyNamer("outbox", Outbox{})) }

// Check fills the worker id (default hostname-pid) and checks the fields;
// errors name them with name.
func (o *Outbox) Check(name Namer) error {
	if o.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "publisher"
		}
		o.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	ints := []struct {
		field string
		v     int
		min   int
		max   int
	}{
		{"Concurrency", o.Concurrency, 1, 256},
		{"BulkSize", o.BulkSize, 1, 10000},
		{"MaxAttempts", o.MaxAttempts, 1, 1000},
		{"RetentionBatchSize", o.RetentionBatchSize, 1, 1_000_000},
	}
	for _, n := range ints {
		if n.v < n.min || n.v > n.max {
			return fmt.Errorf("%s must be in %d..%d, got %d", name(n.field), n.min, n.max, n.v)
		}
	}
	positive := []struct {
		field string
		d     conf.Duration
	}{
		{"PollInterval", o.PollInterval},
		{"Lease", o.Lease},
		{"ReclaimInterval", o.ReclaimInterval},
		{"MaxProcessing", o.MaxProcessing},
		{"BaseBackoff", o.BaseBackoff},
		{"MaxBackoff", o.MaxBackoff},
		{"StatsInterval", o.StatsInterval},
		{"GracePeriod", o.GracePeriod},
		{"RetentionInterval", o.RetentionInterval},
	}
	for _, p := range positive {
		if p.d.D() <= 0 {
			return fmt.Errorf("%s must be > 0, got %s", name(p.field), p.d)
		}
	}
	switch {
	case o.Lease.D() < 500*time.Millisecond:
		return fmt.Errorf("%s must be >= 500ms, got %s", name("Lease"), o.Lease)
	case o.MaxProcessing.D() < o.Lease.D():
		return fmt.Errorf("%s %s must be >= %s %s", name("MaxProcessing"), o.MaxProcessing, name("Lease"), o.Lease)
	case o.MaxBackoff.D() < o.BaseBackoff.D():
		return fmt.Errorf("%s %s must be >= %s %s", name("MaxBackoff"), o.MaxBackoff, name("BaseBackoff"), o.BaseBackoff)
	case o.Retention.D() < 0:
		return fmt.Errorf("%s must be >= 0 (0 disables), got %s", name("Retention"), o.Retention)
	case o.FetchCooldown.D() < 0 || o.FetchCooldown.D() >= o.PollInterval.D():
		return fmt.Errorf("%s must be >= 0 and below %s %s, got %s", name("FetchCooldown"), name("PollInterval"), o.PollInterval, o.FetchCooldown)
	case o.ReindexBloatFactor != 0 && !(o.ReindexBloatFactor >= MinReindexBloatFactor):
		return fmt.Errorf("%s must be >= %d (or rebuilds disabled), got %v", name("ReindexBloatFactor"), MinReindexBloatFactor, o.ReindexBloatFactor)
	case o.ReindexMinBytes < 0:
		return fmt.Errorf("%s must be >= 0, got %d", name("ReindexMinBytes"), o.ReindexMinBytes)
	case o.PartitionHeartbeat.D() < 0 || o.PartitionHeartbeat.D() > o.Lease.D()/3:
		return fmt.Errorf("%s must be in 0..%s (a third of %s; 0 means a quarter), got %s",
			name("PartitionHeartbeat"), conf.Duration(o.Lease.D()/3), name("Lease"), o.PartitionHeartbeat)
	}
	if o.PartitionHeartbeat == 0 {
		o.PartitionHeartbeat = conf.Duration(o.Lease.D() / 4)
	}
	switch o.Jitter {
	case "equal", "full":
	default:
		return fmt.Errorf(`%s must be "equal" or "full", got %q`, name("Jitter"), o.Jitter)
	}
	return nil
}

// Validate checks the publish keys.
func (p *Publish) Validate() error { return p.Check(KeyNamer("publish", Publish{})) }

// Check checks the fields; errors name them with name.
func (p *Publish) Check(name Namer) error {
	if p.MaxMessageBytes < 1 || p.MaxMessageBytes > MaxPubSubMessageBytes {
		return fmt.Errorf("%s must be in 1..%d, got %d", name("MaxMessageBytes"), MaxPubSubMessageBytes, p.MaxMessageBytes)
	}
	if p.Timeout.D() <= 0 {
		return fmt.Errorf("%s must be > 0, got %s", name("Timeout"), p.Timeout)
	}
	if p.DelayThreshold.D() < 0 {
		return fmt.Errorf("%s must be >= 0, got %s", name("DelayThreshold"), p.DelayThreshold)
	}
	if p.CountThreshold < 1 || p.CountThreshold > 1000 {
		return fmt.Errorf("%s must be in 1..1000, got %d", name("CountThreshold"), p.CountThreshold)
	}
	if p.MaxInflightRequests < 1 || p.MaxInflightRequests > 10000 {
		return fmt.Errorf("%s must be in 1..10000, got %d", name("MaxInflightRequests"), p.MaxInflightRequests)
	}
	for at, topic := range p.Topics {
		if strings.TrimSpace(at) == "" || strings.TrimSpace(topic) == "" {
			return fmt.Errorf("%s[%q] = %q: aggregate type and topic must be non-empty", name("Topics"), at, topic)
		}
	}
	return nil
}
