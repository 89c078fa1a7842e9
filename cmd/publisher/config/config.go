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
	"regexp"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/settings"
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

// Outbox configures claiming, retries and retention; Config.Options
// converts it into relay.Options (see their documentation).
type Outbox struct {
	// Mode is how the relay finds committed rows: "poll" (claims them,
	// the default) or "log" (reads their inserts from a logical
	// replication slot: wal_level=logical and a role with REPLICATION;
	// relay.Options.Mode).
	Mode string `yaml:"mode" env:"OUTBOX_MODE"`
	// LogSlot and LogPublication name the log mode's slot and publication
	// (default eventrelay_<schema>; slot names are cluster-wide, unlike
	// schemas).
	LogSlot        string `yaml:"log_slot" env:"OUTBOX_LOG_SLOT"`
	LogPublication string `yaml:"log_publication" env:"OUTBOX_LOG_PUBLICATION"`
	// WorkerID names this replica in locked_by (default hostname-pid).
	WorkerID string `yaml:"worker_id" env:"OUTBOX_WORKER_ID"`
	// Concurrency is the number of claimed batches in flight per replica.
	Concurrency int `yaml:"concurrency" env:"OUTBOX_CONCURRENCY"`
	// BulkSize is the maximum number of rows per claim.
	BulkSize int `yaml:"bulk_size" env:"OUTBOX_BULK_SIZE"`
	// PollInterval is the fallback when no NOTIFY arrives.
	PollInterval time.Duration `yaml:"poll_interval" env:"OUTBOX_POLL_INTERVAL_SECONDS"`
	// Listen turns on LISTEN (wake within milliseconds); off sets
	// relay.Options.ListenOff.
	Listen bool `yaml:"listen" env:"OUTBOX_LISTEN"`
	// FetchCooldown is the least time between the starts of two claims
	// that were not forced by a full batch: wake-ups within it are
	// coalesced into one claim, and while claims keep returning rows the
	// relay claims again after it without a NOTIFY (writers skip theirs,
	// see outbox_wakeups). 0 claims on every wake-up
	// (relay.Options.FetchCooldownOff).
	FetchCooldown time.Duration `yaml:"fetch_cooldown" env:"OUTBOX_FETCH_COOLDOWN_SECONDS" zero:"allowed"`
	// Lease is how long a claim is valid without extension.
	Lease time.Duration `yaml:"lease" env:"OUTBOX_LEASE_SECONDS"`
	// PartitionHeartbeat is how often a replica renews its membership and
	// its outbox partitions' leases (which last lease - heartbeat) and
	// rebalances them (0: lease/4; at most lease/3).
	PartitionHeartbeat time.Duration `yaml:"partition_heartbeat" env:"OUTBOX_PARTITION_HEARTBEAT_SECONDS" zero:"allowed"`
	// ReclaimInterval is how often expired claims are taken over.
	ReclaimInterval time.Duration `yaml:"reclaim_interval" env:"OUTBOX_RECLAIM_INTERVAL_SECONDS"`
	// MaxProcessing bounds a claim even when its lease keeps being extended.
	MaxProcessing time.Duration `yaml:"max_processing" env:"OUTBOX_MAX_PROCESSING_SECONDS"`
	// MaxAttempts is the number of publish attempts before a row fails with
	// max_attempts_exceeded (an outage or a missing topic or permission
	// holds the topic and spends none).
	MaxAttempts int `yaml:"max_attempts" env:"OUTBOX_MAX_ATTEMPTS"`
	// BaseBackoff and MaxBackoff bound the retry delay
	// min(max, base * 2^attempts), jittered.
	BaseBackoff time.Duration `yaml:"base_backoff" env:"OUTBOX_BASE_BACKOFF_SECONDS"`
	MaxBackoff  time.Duration `yaml:"max_backoff" env:"OUTBOX_MAX_BACKOFF_SECONDS"`
	// Jitter is "equal" (delay in [d/2, d]) or "full" (delay in [0, d]).
	Jitter string `yaml:"jitter" env:"OUTBOX_BACKOFF_JITTER"`
	// StatsInterval is how often the lag/age/stuck gauges are refreshed.
	StatsInterval time.Duration `yaml:"stats_interval" env:"OUTBOX_STATS_INTERVAL_SECONDS"`
	// StallAfter: a replica owning partitions that published nothing this
	// long while the oldest pending row is older reports a stall (0 turns
	// it off: relay.Options.StallAfterOff).
	StallAfter time.Duration `yaml:"stall_after" env:"OUTBOX_STALL_AFTER_SECONDS" zero:"allowed"`
	// GracePeriod bounds the drain on SIGTERM.
	GracePeriod time.Duration `yaml:"grace_period" env:"OUTBOX_GRACE_PERIOD_SECONDS"`
	// Retention keeps published rows this long (0 disables deletion:
	// relay.Options.RetentionOff).
	Retention time.Duration `yaml:"retention" env:"OUTBOX_RETENTION_SECONDS" zero:"allowed"`
	// RetentionInterval is how often old published rows are deleted.
	RetentionInterval time.Duration `yaml:"retention_interval" env:"OUTBOX_RETENTION_INTERVAL_SECONDS"`
	// RetentionBatchSize bounds each DELETE.
	RetentionBatchSize int `yaml:"retention_batch_size" env:"OUTBOX_RETENTION_BATCH_SIZE"`
	// ReindexBloatFactor: after each retention round, an outbox index
	// whose size (at its last VACUUM/ANALYZE) is more than this many times
	// what its live entries need is rebuilt with REINDEX CONCURRENTLY, by
	// one replica at a time (0 disables: relay.Options.ReindexOff).
	ReindexBloatFactor float64 `yaml:"reindex_bloat_factor" env:"OUTBOX_REINDEX_BLOAT_FACTOR" zero:"allowed"`
	// ReindexMinBytes: indexes smaller than this are never rebuilt (0: no
	// minimum).
	ReindexMinBytes int64 `yaml:"reindex_min_bytes" env:"OUTBOX_REINDEX_MIN_BYTES" zero:"allowed"`
}

// StopTimeout is the whole SIGTERM drain: the grace period for in-flight
// batches plus one lease for the last outcome writes. The daemon's Kratos
// stop timeout and deploy/'s termination grace both derive from it.
func (o Outbox) StopTimeout() time.Duration { return o.GracePeriod + o.Lease }

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
	Timeout time.Duration `yaml:"timeout" env:"OUTBOX_PUBLISH_TIMEOUT_SECONDS"`
	// The client library bundles per ordering key (Cloud Pub/Sub takes one
	// key per Publish request): DelayThreshold is how long a key's bundle
	// waits for more messages, CountThreshold the most messages per
	// request (1..1000). DelayThreshold 0 sends at once
	// (relay.PublishOptions.DelayThresholdOff).
	DelayThreshold time.Duration `yaml:"delay_threshold" env:"OUTBOX_PUBLISH_DELAY_THRESHOLD" zero:"allowed"`
	CountThreshold int           `yaml:"count_threshold" env:"OUTBOX_PUBLISH_COUNT_THRESHOLD"`
	// MaxInflightRequests is how many Publish requests (each of one
	// ordering key) are in flight at once per topic: the library's
	// NumGoroutines. Throughput per topic is at most this many requests
	// per round trip.
	MaxInflightRequests int `yaml:"max_inflight_requests" env:"OUTBOX_PUBLISH_MAX_INFLIGHT_REQUESTS"`
	// ReadyTopic is probed by /readyz (GetTopic). Empty: the routed topics
	// and those published to since the start.
	ReadyTopic string `yaml:"ready_topic" env:"OUTBOX_READY_TOPIC"`
	// Subscriptions lists, per topic id, the subscriptions that must
	// receive it (the consumers' subscriptions of configs/pubsub.yaml):
	// while one is missing or detached, publishing to the topic is held.
	// A topic not listed is not checked.
	Subscriptions map[string][]string `yaml:"subscriptions"`
	// SubscriptionCheckInterval is how often Subscriptions are read
	// (GetSubscription).
	SubscriptionCheckInterval time.Duration `yaml:"subscription_check_interval" env:"OUTBOX_SUBSCRIPTION_CHECK_SECONDS"`
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

// Settings are the client library's publish settings of these keys, for
// the bench's publish loop without a relay.
func (p Publish) Settings() pubsub.PublishSettings {
	s := pubsub.DefaultPublishSettings
	s.DelayThreshold = p.DelayThreshold
	s.CountThreshold = p.CountThreshold
	s.NumGoroutines = p.MaxInflightRequests
	s.Timeout = p.Timeout
	return s
}

// Default returns the configuration used for keys the file and the
// environment leave unset: the relay's defaults (relay.Options.WithDefaults),
// never restated here, and the daemon's own. A key whose 0 turns a
// feature off keeps the relay's default; PartitionHeartbeat 0 is the
// relay's own default (a quarter of the lease).
func Default() Config {
	r := relay.Options{}.WithDefaults()
	p := r.Publish
	return Config{
		Database: Database{ConnectTimeout: 5 * time.Second},
		Outbox: Outbox{
			Mode: string(r.Mode), Concurrency: r.Concurrency, BulkSize: r.BulkSize,
			PollInterval: r.PollInterval, Listen: !r.ListenOff, FetchCooldown: r.FetchCooldown,
			Lease: r.Lease, ReclaimInterval: r.ReclaimInterval, MaxProcessing: r.MaxProcessing,
			MaxAttempts: r.MaxAttempts, BaseBackoff: r.BaseBackoff, MaxBackoff: r.MaxBackoff, Jitter: r.Jitter,
			StatsInterval: r.StatsInterval, StallAfter: r.StallAfter, GracePeriod: r.GracePeriod,
			Retention: r.Retention, RetentionInterval: r.RetentionInterval, RetentionBatchSize: r.RetentionBatchSize,
			ReindexBloatFactor: r.ReindexBloatFactor, ReindexMinBytes: r.ReindexMinBytes,
		},
		Publish: Publish{
			MaxMessageBytes: p.MaxMessageBytes, Timeout: p.Timeout, DelayThreshold: p.DelayThreshold,
			CountThreshold: p.CountThreshold, MaxInflightRequests: p.MaxInflightRequests,
			SubscriptionCheckInterval: p.SubscriptionCheckInterval,
		},
		HTTP: HTTP{Port: 8081},
		Log:  Log{Level: "info"},
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
	// The keys whose 0 has a meaning of its own (zero:"allowed"; Options
	// turns it into the relay's switches) are refused here when negative,
	// so that the error says what 0 means.
	for _, k := range []struct {
		key, zero string
		negative  bool
	}{
		{"outbox.fetch_cooldown (OUTBOX_FETCH_COOLDOWN_SECONDS)", "a claim on every wake-up", c.Outbox.FetchCooldown < 0},
		{"outbox.partition_heartbeat (OUTBOX_PARTITION_HEARTBEAT_SECONDS)", "a quarter of outbox.lease", c.Outbox.PartitionHeartbeat < 0},
		{"outbox.stall_after (OUTBOX_STALL_AFTER_SECONDS)", "no stall detection", c.Outbox.StallAfter < 0},
		{"outbox.retention (OUTBOX_RETENTION_SECONDS)", "never delete", c.Outbox.Retention < 0},
		{"outbox.reindex_bloat_factor (OUTBOX_REINDEX_BLOAT_FACTOR)", "never rebuild", c.Outbox.ReindexBloatFactor < 0},
		{"outbox.reindex_min_bytes (OUTBOX_REINDEX_MIN_BYTES)", "no minimum", c.Outbox.ReindexMinBytes < 0},
		{"publish.delay_threshold (OUTBOX_PUBLISH_DELAY_THRESHOLD)", "no wait", c.Publish.DelayThreshold < 0},
	} {
		if k.negative {
			return fmt.Errorf("%s must be >= 0 (0: %s), got a negative value", k.key, k.zero)
		}
	}
	if err := c.Options().Validate(); err != nil {
		return keyError(err)
	}
	if c.Database.MaxConns == 0 {
		c.Database.MaxConns = int32(c.Outbox.Concurrency) + 4
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

// Options converts the configuration into the relay's options (without
// the logger, registry and health the daemon adds).
func (c Config) Options() relay.Options {
	o, p := c.Outbox, c.Publish
	minBytes := o.ReindexMinBytes
	if minBytes == 0 {
		minBytes = 1 // no minimum: an index of any size
	}
	return relay.Options{
		Mode:               relay.Mode(o.Mode),
		Log:                relay.LogOptions{Slot: o.LogSlot, Publication: o.LogPublication},
		Schema:             c.Database.Schema,
		ListenOff:          !o.Listen,
		FetchCooldown:      o.FetchCooldown,
		FetchCooldownOff:   o.FetchCooldown == 0,
		WorkerID:           o.WorkerID,
		Concurrency:        o.Concurrency,
		BulkSize:           o.BulkSize,
		MaxAttempts:        o.MaxAttempts,
		PollInterval:       o.PollInterval,
		Lease:              o.Lease,
		PartitionHeartbeat: o.PartitionHeartbeat,
		ReclaimInterval:    o.ReclaimInterval,
		MaxProcessing:      o.MaxProcessing,
		BaseBackoff:        o.BaseBackoff,
		MaxBackoff:         o.MaxBackoff,
		Jitter:             o.Jitter,
		StatsInterval:      o.StatsInterval,
		StallAfter:         o.StallAfter,
		StallAfterOff:      o.StallAfter == 0,
		GracePeriod:        o.GracePeriod,
		Retention:          o.Retention,
		RetentionOff:       o.Retention == 0,
		RetentionInterval:  o.RetentionInterval,
		RetentionBatchSize: o.RetentionBatchSize,
		ReindexBloatFactor: o.ReindexBloatFactor,
		ReindexMinBytes:    minBytes,
		ReindexOff:         o.ReindexBloatFactor == 0,
		Publish: relay.PublishOptions{
			Topics:              p.Topics,
			MaxMessageBytes:     p.MaxMessageBytes,
			Timeout:             p.Timeout,
			DelayThreshold:      p.DelayThreshold,
			DelayThresholdOff:   p.DelayThreshold == 0,
			CountThreshold:      p.CountThreshold,
			MaxInflightRequests: p.MaxInflightRequests,
			ReadyTopic:          p.ReadyTopic,

			Subscriptions:             p.Subscriptions,
			SubscriptionCheckInterval: p.SubscriptionCheckInterval,
		},
	}
}

// keys names the relay.Options fields by the daemon's keys.
var keys = map[string]string{
	"Schema":                      "database.schema (DATABASE_SCHEMA)",
	"Mode":                        "outbox.mode (OUTBOX_MODE)",
	"Log.Slot":                    "outbox.log_slot (OUTBOX_LOG_SLOT)",
	"Log.Publication":             "outbox.log_publication (OUTBOX_LOG_PUBLICATION)",
	"WorkerID":                    "outbox.worker_id (OUTBOX_WORKER_ID)",
	"Concurrency":                 "outbox.concurrency (OUTBOX_CONCURRENCY)",
	"BulkSize":                    "outbox.bulk_size (OUTBOX_BULK_SIZE)",
	"PollInterval":                "outbox.poll_interval (OUTBOX_POLL_INTERVAL_SECONDS)",
	"FetchCooldown":               "outbox.fetch_cooldown (OUTBOX_FETCH_COOLDOWN_SECONDS)",
	"Lease":                       "outbox.lease (OUTBOX_LEASE_SECONDS)",
	"PartitionHeartbeat":          "outbox.partition_heartbeat (OUTBOX_PARTITION_HEARTBEAT_SECONDS)",
	"ReclaimInterval":             "outbox.reclaim_interval (OUTBOX_RECLAIM_INTERVAL_SECONDS)",
	"MaxProcessing":               "outbox.max_processing (OUTBOX_MAX_PROCESSING_SECONDS)",
	"MaxAttempts":                 "outbox.max_attempts (OUTBOX_MAX_ATTEMPTS)",
	"BaseBackoff":                 "outbox.base_backoff (OUTBOX_BASE_BACKOFF_SECONDS)",
	"MaxBackoff":                  "outbox.max_backoff (OUTBOX_MAX_BACKOFF_SECONDS)",
	"Jitter":                      "outbox.jitter (OUTBOX_BACKOFF_JITTER)",
	"StatsInterval":               "outbox.stats_interval (OUTBOX_STATS_INTERVAL_SECONDS)",
	"StallAfter":                  "outbox.stall_after (OUTBOX_STALL_AFTER_SECONDS)",
	"GracePeriod":                 "outbox.grace_period (OUTBOX_GRACE_PERIOD_SECONDS)",
	"Retention":                   "outbox.retention (OUTBOX_RETENTION_SECONDS)",
	"RetentionInterval":           "outbox.retention_interval (OUTBOX_RETENTION_INTERVAL_SECONDS)",
	"RetentionBatchSize":          "outbox.retention_batch_size (OUTBOX_RETENTION_BATCH_SIZE)",
	"ReindexBloatFactor":          "outbox.reindex_bloat_factor (OUTBOX_REINDEX_BLOAT_FACTOR)",
	"ReindexMinBytes":             "outbox.reindex_min_bytes (OUTBOX_REINDEX_MIN_BYTES)",
	"Publish.Topics":              "publish.topics",
	"Publish.MaxMessageBytes":     "publish.max_message_bytes (OUTBOX_MAX_MESSAGE_BYTES)",
	"Publish.Timeout":             "publish.timeout (OUTBOX_PUBLISH_TIMEOUT_SECONDS)",
	"Publish.DelayThreshold":      "publish.delay_threshold (OUTBOX_PUBLISH_DELAY_THRESHOLD)",
	"Publish.CountThreshold":      "publish.count_threshold (OUTBOX_PUBLISH_COUNT_THRESHOLD)",
	"Publish.MaxInflightRequests": "publish.max_inflight_requests (OUTBOX_PUBLISH_MAX_INFLIGHT_REQUESTS)",

	"Publish.Subscriptions":             "publish.subscriptions",
	"Publish.SubscriptionCheckInterval": "publish.subscription_check_interval (OUTBOX_SUBSCRIPTION_CHECK_SECONDS)",
}

// optionRef is a field named in an OptionError's problem.
var optionRef = regexp.MustCompile(`Options\.[A-Za-z]+(\.[A-Za-z]+)?`)

// keyError restates a relay.OptionError with the daemon's keys.
func keyError(err error) error {
	var oe *relay.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	key := func(field string) string {
		if k, ok := keys[field]; ok {
			return k
		}
		return "relay.Options." + field
	}
	problem := optionRef.ReplaceAllStringFunc(oe.Problem, func(ref string) string { return key(strings.TrimPrefix(ref, "Options.")) })
	return fmt.Errorf("%s %s", key(oe.Field), problem)
}
