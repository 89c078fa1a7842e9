package relay

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay/internal/logread"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
)

// Options configures a Relay. It is a plain struct: a zero field takes
// its documented default, and features that can be turned off have a
// switch of their own (ListenOff, FetchCooldownOff, RetentionOff,
// ReindexOff, Publish.DelayThresholdOff). New validates the result;
// its errors are *OptionError and name the field ("relay: Options.Lease
// must be ...").
//
// Each field is also a key of a configuration file read by package
// settings (cmd/publisher's outbox and publish sections, a service's
// eventrelay.relay): its name in snake case or its `yaml` tag, with the
// environment variable of its `env` tag. A key's 0 turns off what its
// `off` tag names (retention: 0 sets RetentionOff); listen is the opposite
// of ListenOff.
type Options struct {
	// Mode is how the relay finds committed rows: ModePoll (the default)
	// claims them from outbox_events; ModeLog reads their inserts from a
	// logical replication slot and writes nothing per event (see Log and
	// docs/design.md).
	Mode Mode `env:"OUTBOX_MODE"`
	// Log configures ModeLog; ignored by ModePoll.
	Log LogOptions `yaml:",inline"`

	// Schema holds outbox_events. Empty: the first schema of the pool's
	// search_path. The relay's SQL is unqualified: the pool's search_path
	// must start with Schema (see PoolConfig); New refuses a pool
	// configured otherwise, or one that sets no search_path when Schema is
	// empty.
	Schema string `yaml:"-"`
	// NotifyChannel is the LISTEN channel (default
	// outbox.NotifyChannelFor(Schema), the channel an outbox.Writer on
	// Schema notifies by default). Set it only together with the writers'
	// outbox.Config.NotifyChannel.
	NotifyChannel string
	// ListenOff turns LISTEN off: the relay only polls every PollInterval.
	ListenOff bool `yaml:"listen" env:"OUTBOX_LISTEN" negate:"true"`
	// FetchCooldown is the least time between two claims that were not
	// forced by a full batch (default 40ms, below PollInterval). Wake-ups
	// within it coalesce into one claim; while claims return rows the
	// relay claims again after it by itself and asks writers not to
	// notify (outbox_wakeups), which spares their commits NOTIFY's
	// database-wide lock. After an idle period a NOTIFY is answered at
	// once.
	FetchCooldown time.Duration `env:"OUTBOX_FETCH_COOLDOWN_SECONDS" off:"FetchCooldownOff"`
	// FetchCooldownOff claims on every wake-up, with no cooldown (writers
	// then notify on every commit).
	FetchCooldownOff bool `yaml:"-"`

	// WorkerID names this replica in locked_by (default hostname-pid; at
	// most 255 bytes of printable UTF-8).
	WorkerID string `env:"OUTBOX_WORKER_ID"`
	// Concurrency is the number of claimed batches in flight (default 4,
	// 1..256).
	Concurrency int `env:"OUTBOX_CONCURRENCY"`
	// BulkSize is the maximum number of rows per claim (default 500,
	// 1..10000).
	BulkSize int `env:"OUTBOX_BULK_SIZE"`
	// MaxAttempts is the number of publish attempts before a row fails
	// with max_attempts_exceeded (default 12, 1..1000). Only errors that
	// may be the event's own spend attempts: an outage, a quota, a missing
	// topic or permission holds the topic instead.
	MaxAttempts int `env:"OUTBOX_MAX_ATTEMPTS"`
	// PollInterval is the fallback when no NOTIFY arrives (default 1s).
	// Like every duration below, it must be positive.
	PollInterval time.Duration `env:"OUTBOX_POLL_INTERVAL_SECONDS"`
	// Lease is how long a claim is valid without extension (default 30s,
	// at least 500ms).
	Lease time.Duration `env:"OUTBOX_LEASE_SECONDS"`
	// PartitionHeartbeat is how often the replica renews its membership
	// and its outbox partitions' leases and rebalances them (default
	// Lease/4, at most Lease/3). A crashed replica's partitions move to
	// the others within one Lease.
	PartitionHeartbeat time.Duration `env:"OUTBOX_PARTITION_HEARTBEAT_SECONDS" zero:"allowed"`
	// ReclaimInterval is how often expired claims are taken over (default
	// 10s).
	ReclaimInterval time.Duration `env:"OUTBOX_RECLAIM_INTERVAL_SECONDS"`
	// MaxProcessing bounds a claim even when its lease keeps being
	// extended (default 5m, at least Lease).
	MaxProcessing time.Duration `env:"OUTBOX_MAX_PROCESSING_SECONDS"`
	// BaseBackoff and MaxBackoff bound the retry delay
	// min(MaxBackoff, BaseBackoff * 2^attempts), jittered (defaults 1s and
	// 5m).
	BaseBackoff time.Duration `env:"OUTBOX_BASE_BACKOFF_SECONDS"`
	MaxBackoff  time.Duration `env:"OUTBOX_MAX_BACKOFF_SECONDS"`
	// Jitter is "equal" (delay in [d/2, d], the default) or "full" (delay
	// in [0, d]).
	Jitter string `env:"OUTBOX_BACKOFF_JITTER"`
	// StatsInterval is how often the lag/age/stuck gauges are refreshed
	// (default 10s). Their read counts the pending rows: while a backlog
	// makes it slow, a read that took d is followed by the next after
	// 50 × d when that is longer, at most a minute (a read keeps a
	// backend busy at most 2 % of the time).
	StatsInterval time.Duration `env:"OUTBOX_STATS_INTERVAL_SECONDS"`
	// StallAfter is how long the outbox may hold pending rows older than
	// it while this replica, owning partitions, publishes nothing, before
	// it reports a stall: readiness check "stall" fails and outbox_stalled
	// is 1 until the next publish (default 2m; checked at every refresh
	// of the gauges, see StatsInterval).
	StallAfter time.Duration `env:"OUTBOX_STALL_AFTER_SECONDS" off:"StallAfterOff"`
	// StallAfterOff turns stall detection off.
	StallAfterOff bool `yaml:"-"`
	// DrainTimeout bounds the drain on Stop (default 20s): in-flight
	// batches finish within it, then unfinished rows are handed back.
	DrainTimeout time.Duration `env:"OUTBOX_GRACE_PERIOD_SECONDS" alias:"grace_period"`
	// Retention keeps published rows this long before deleting them
	// (default 72h).
	Retention time.Duration `env:"OUTBOX_RETENTION_SECONDS" off:"RetentionOff"`
	// RetentionOff never deletes published rows.
	RetentionOff bool `yaml:"-"`
	// RetentionInterval is how often old published rows are deleted
	// (default 1m).
	RetentionInterval time.Duration `env:"OUTBOX_RETENTION_INTERVAL_SECONDS"`
	// RetentionBatchSize bounds each DELETE (default 5000,
	// 1..1,000,000).
	RetentionBatchSize int `env:"OUTBOX_RETENTION_BATCH_SIZE"`
	// ReindexBloatFactor: every RetentionInterval, an outbox index whose
	// size at its last VACUUM/ANALYZE is more than this many times what
	// its live entries need is rebuilt (REINDEX CONCURRENTLY), by one
	// replica at a time (default 4, at least 2: a healthy index measures
	// 1.0 to 1.4 times its estimate).
	ReindexBloatFactor float64 `env:"OUTBOX_REINDEX_BLOAT_FACTOR" off:"ReindexOff"`
	// ReindexMinBytes: smaller indexes are never rebuilt (default 8 MiB;
	// 1 rebuilds bloated indexes of any size).
	ReindexMinBytes int64 `env:"OUTBOX_REINDEX_MIN_BYTES"`
	// ReindexOff never rebuilds the outbox's indexes (their sizes are
	// still exported as outbox_index_bytes).
	ReindexOff bool `yaml:"-"`

	// Publish configures the Pub/Sub side.
	Publish PublishOptions

	// Logger receives the relay's structured logs (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the relay's metrics (outbox_*; default: not
	// exported). One Registerer holds one relay's metrics: wrap it
	// (prometheus.WrapRegistererWith) to register several.
	Registerer prometheus.Registerer
	// Health, when set, receives the relay's loop ("outbox-relay") for
	// /healthz and its readiness checks "postgres" (ping), "schema"
	// (Schema holds the outbox table), "pubsub" (ReadyTopic answers),
	// "publish_blocked" (no topic held), "store_blocked" (no statement
	// refused for a missing privilege) and "stall" (see StallAfter; ModePoll),
	// or in ModeLog "log_stream" (the slot's sessions do not fail);
	// Stop marks it draining. Mount it with health.Handler. Checks and
	// loops are keyed by name: a second relay on the same Health replaces
	// the first one's. Default: a Health of the relay's own, served by
	// nobody.
	Health *health.Health
	// TracerProvider makes the producer spans (default: the global one).
	TracerProvider trace.TracerProvider
}

// Mode is how the relay finds committed rows.
type Mode string

// The relay's modes.
const (
	// ModePoll claims committed rows from outbox_events under leases and
	// marks each published (the default; needs no replication privilege).
	ModePoll Mode = "poll"
	// ModeLog reads committed inserts from a logical replication slot
	// (pgoutput, wal_level=logical, a role with REPLICATION) and confirms
	// the slot only below what Pub/Sub acknowledged: no per-event write.
	// One relay per slot reads; the others wait as standbys.
	ModeLog Mode = "log"
)

// LogOptions configures ModeLog. Zero values take the defaults.
type LogOptions struct {
	// Slot is the logical replication slot (default "eventrelay_" +
	// Schema; lower-case letters, digits and underscores, at most 63).
	// The relay creates it, and creates it again when it is lost.
	Slot string `yaml:"log_slot" env:"OUTBOX_LOG_SLOT"`
	// Publication is the publication of outbox_events' inserts the slot
	// streams (default "eventrelay_" + Schema; same rule). The relay
	// creates it when it is missing (the role must own the table).
	Publication string `yaml:"log_publication" env:"OUTBOX_LOG_PUBLICATION"`
	// StandbyRetry is how often a standby tries to become the slot's
	// reader (default 1s): a reader that dies is replaced within about it.
	// The reader pings its lock's connection as often, and ends its
	// session when the lock is lost.
	StandbyRetry time.Duration `yaml:"log_standby_retry"`
	// ConfirmInterval is how often the slot's confirmed position and the
	// published horizon (outbox_log_slots) are written (default 1s).
	ConfirmInterval time.Duration `yaml:"log_confirm_interval"`
	// Linger is the longest a live event waits for more before it is
	// published (default 10ms): the events of a key read within it share
	// Publish requests. The stream's events are published at once when it
	// has nothing more to read; a backlog lingers longer to group each
	// key's versions. It is the log mode's own: there is no claim to
	// amortize, so FetchCooldown does not apply.
	Linger time.Duration `yaml:"log_linger"`
}

// PublishOptions configures publishing. Zero values take the defaults.
type PublishOptions struct {
	// Topics routes aggregate types to topic ids, overriding the row's
	// topic; unlisted aggregate types use the row's topic.
	Topics map[string]string
	// MaxMessageBytes fails larger messages with message_too_large
	// without calling Pub/Sub (default and maximum 10,000,000).
	MaxMessageBytes int `env:"OUTBOX_MAX_MESSAGE_BYTES"`
	// Timeout bounds one publish; the client retries transient errors
	// within it (default 20s).
	Timeout time.Duration `env:"OUTBOX_PUBLISH_TIMEOUT_SECONDS"`
	// DelayThreshold is how long an ordering key's bundle waits for more
	// messages (default 2ms). Cloud Pub/Sub takes one ordering key per
	// Publish request.
	DelayThreshold time.Duration `env:"OUTBOX_PUBLISH_DELAY_THRESHOLD" off:"DelayThresholdOff"`
	// DelayThresholdOff sends each bundle without waiting for more
	// messages.
	DelayThresholdOff bool `yaml:"-"`
	// CountThreshold is the most messages per Publish request (default
	// 100, 1..1000).
	CountThreshold int `env:"OUTBOX_PUBLISH_COUNT_THRESHOLD"`
	// MaxInflightRequests is how many Publish requests (each of one
	// ordering key) are in flight at once per topic (default 256,
	// 1..10000): the client library's NumGoroutines. Throughput per topic
	// is at most this many requests per round trip.
	MaxInflightRequests int `env:"OUTBOX_PUBLISH_MAX_INFLIGHT_REQUESTS"`
	// ReadyTopic is probed by the "pubsub" readiness check (GetTopic,
	// pubsub.topics.get on it). Empty: the Topics routes and the topics
	// published to since the start (none yet: nothing to check); never a
	// project-wide list, which a publisher granted its topics alone lacks.
	ReadyTopic string `env:"OUTBOX_READY_TOPIC"`
	// Subscriptions declares, per topic id, the subscriptions that must
	// receive what is published to it (the consumers' subscriptions of
	// configs/pubsub.yaml). Every SubscriptionCheckInterval each is read
	// (GetSubscription); while one is missing, detached (its topic was
	// deleted and re-created) or attached elsewhere, publishing to the
	// topic is held: rows wait pending, none fails, readiness check
	// "subscriptions" and gauge outbox_subscription_detached name it. A
	// topic not listed (one meant to have no subscriptions) is never
	// checked.
	Subscriptions map[string][]string
	// SubscriptionCheckInterval is how often Subscriptions are read
	// (default 30s).
	SubscriptionCheckInterval time.Duration `env:"OUTBOX_SUBSCRIPTION_CHECK_SECONDS"`
}

// Defaults of the fields whose zero value means "default".
const (
	defaultConcurrency        = 4
	defaultBulkSize           = 500
	defaultMaxAttempts        = 12
	defaultPollInterval       = time.Second
	defaultFetchCooldown      = 40 * time.Millisecond
	defaultLease              = 30 * time.Second
	defaultReclaimInterval    = 10 * time.Second
	defaultMaxProcessing      = 5 * time.Minute
	defaultBaseBackoff        = time.Second
	defaultMaxBackoff         = 5 * time.Minute
	defaultJitter             = "equal"
	defaultStatsInterval      = 10 * time.Second
	defaultStallAfter         = 2 * time.Minute
	defaultDrainTimeout       = 20 * time.Second
	defaultRetention          = 72 * time.Hour
	defaultRetentionInterval  = time.Minute
	defaultRetentionBatchSize = 5000
	defaultReindexBloatFactor = 4
	defaultReindexMinBytes    = 8 << 20

	defaultStandbyRetry    = time.Second
	defaultConfirmInterval = time.Second
	defaultLogLinger       = 10 * time.Millisecond

	defaultPublishTimeout      = 20 * time.Second
	defaultDelayThreshold      = 2 * time.Millisecond
	defaultCountThreshold      = 100
	defaultMaxInflightRequests = 256
	defaultSubscriptionCheck   = 30 * time.Second
)

// Limits of the validation.
const (
	// minLease keeps lease extensions (every third of a lease) and
	// heartbeats meaningful.
	minLease = 500 * time.Millisecond
	// minReindexBloatFactor: a healthy index measures 1.0 to 1.4 times its
	// estimate (random keys fill pages to about 70%, and the estimate
	// errs); below 2 it would be rebuilt again and again.
	minReindexBloatFactor = 2
	// maxPubSubMessageBytes is Pub/Sub's limit for one message.
	maxPubSubMessageBytes = 10_000_000
)

// An OptionError is an Options field that New or Validate refuses (the
// same shape as projector.OptionError).
type OptionError struct {
	// Field is the field's path: "Options.Lease",
	// "Options.Publish.Timeout".
	Field string
	// Problem says what is wrong with it; other fields it mentions are
	// written the same way.
	Problem string
}

func (e *OptionError) Error() string { return "relay: " + e.Field + " " + e.Problem }

func optionErrorf(field, format string, args ...any) *OptionError {
	return &OptionError{Field: "Options." + field, Problem: fmt.Sprintf(format, args...)}
}

// Validate reports whether New would accept o (with a pool on o.Schema):
// zero fields take their defaults, then every field is checked. The error
// is an *OptionError naming the first field refused. A daemon calls it to
// refuse its configuration before it connects anywhere.
func (o Options) Validate() error { return o.WithDefaults().check() }

// StopTimeout is the shortest stop timeout of a Kratos app (kratos.StopTimeout)
// that embeds this relay: DrainTimeout plus Lease, with their defaults (50s).
// Kratos' own default is 10s; a shorter timeout cuts the drain short (Stop
// logs a warning naming both values), so rows in flight are handed back and
// may be published twice.
func (o Options) StopTimeout() time.Duration {
	d := o.WithDefaults()
	return d.DrainTimeout + d.Lease
}

// withDefaults returns o with its zero fields set to their defaults
// (NotifyChannel needs Schema: New sets it once Schema is known).
func (o Options) WithDefaults() Options {
	orDefault(&o.Concurrency, defaultConcurrency)
	orDefault(&o.BulkSize, defaultBulkSize)
	orDefault(&o.MaxAttempts, defaultMaxAttempts)
	orDefault(&o.PollInterval, defaultPollInterval)
	orDefault(&o.FetchCooldown, defaultFetchCooldown)
	orDefault(&o.Lease, defaultLease)
	orDefault(&o.PartitionHeartbeat, o.Lease/4)
	orDefault(&o.ReclaimInterval, defaultReclaimInterval)
	orDefault(&o.MaxProcessing, defaultMaxProcessing)
	orDefault(&o.BaseBackoff, defaultBaseBackoff)
	orDefault(&o.MaxBackoff, defaultMaxBackoff)
	orDefault(&o.Jitter, defaultJitter)
	orDefault(&o.StatsInterval, defaultStatsInterval)
	orDefault(&o.StallAfter, defaultStallAfter)
	orDefault(&o.DrainTimeout, defaultDrainTimeout)
	orDefault(&o.Retention, defaultRetention)
	orDefault(&o.RetentionInterval, defaultRetentionInterval)
	orDefault(&o.RetentionBatchSize, defaultRetentionBatchSize)
	orDefault(&o.ReindexBloatFactor, defaultReindexBloatFactor)
	orDefault(&o.ReindexMinBytes, defaultReindexMinBytes)
	orDefault(&o.Mode, ModePoll)
	orDefault(&o.Log.StandbyRetry, defaultStandbyRetry)
	orDefault(&o.Log.ConfirmInterval, defaultConfirmInterval)
	orDefault(&o.Log.Linger, defaultLogLinger)
	p := &o.Publish
	orDefault(&p.MaxMessageBytes, maxPubSubMessageBytes)
	orDefault(&p.Timeout, defaultPublishTimeout)
	orDefault(&p.DelayThreshold, defaultDelayThreshold)
	orDefault(&p.CountThreshold, defaultCountThreshold)
	orDefault(&p.MaxInflightRequests, defaultMaxInflightRequests)
	orDefault(&p.SubscriptionCheckInterval, defaultSubscriptionCheck)
	if o.WorkerID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "publisher"
		}
		o.WorkerID = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// maxWorkerIDBytes bounds Options.WorkerID, which every claim, partition
// and membership row carries (a host name of 64 bytes plus a pid fits).
const maxWorkerIDBytes = 255

// orDefault sets *v to def when it is zero.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// check validates o after withDefaults.
func (o Options) check() error {
	if o.Schema != "" && !postgres.ValidSchema(o.Schema) {
		return optionErrorf("Schema", "%q must be a lower-case SQL identifier", o.Schema)
	}
	if o.Mode != ModePoll && o.Mode != ModeLog {
		return optionErrorf("Mode", "must be %q or %q, got %q", ModePoll, ModeLog, o.Mode)
	}
	for _, n := range []struct{ field, v string }{{"Log.Slot", o.Log.Slot}, {"Log.Publication", o.Log.Publication}} {
		if n.v != "" && !logread.ValidName(n.v) {
			return optionErrorf(n.field, "%q must be 1 to 63 lower-case letters, digits or underscores", n.v)
		}
	}
	if o.NotifyChannel != "" {
		if err := outbox.CheckNotifyChannel(o.NotifyChannel); err != nil {
			return optionErrorf("NotifyChannel", "is invalid: %v", err)
		}
	}
	for _, n := range []struct {
		field    string
		v        int
		min, max int
	}{
		{"Concurrency", o.Concurrency, 1, 256},
		{"BulkSize", o.BulkSize, 1, 10000},
		{"MaxAttempts", o.MaxAttempts, 1, 1000},
		{"RetentionBatchSize", o.RetentionBatchSize, 1, 1_000_000},
		{"Publish.MaxMessageBytes", o.Publish.MaxMessageBytes, 1, maxPubSubMessageBytes},
		{"Publish.CountThreshold", o.Publish.CountThreshold, 1, 1000},
		{"Publish.MaxInflightRequests", o.Publish.MaxInflightRequests, 1, 10000},
	} {
		if n.v < n.min || n.v > n.max {
			return optionErrorf(n.field, "must be in %d..%d, got %d", n.min, n.max, n.v)
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"PollInterval", o.PollInterval},
		{"FetchCooldown", o.FetchCooldown},
		{"Lease", o.Lease},
		{"PartitionHeartbeat", o.PartitionHeartbeat},
		{"ReclaimInterval", o.ReclaimInterval},
		{"MaxProcessing", o.MaxProcessing},
		{"BaseBackoff", o.BaseBackoff},
		{"MaxBackoff", o.MaxBackoff},
		{"StatsInterval", o.StatsInterval},
		{"StallAfter", o.StallAfter},
		{"DrainTimeout", o.DrainTimeout},
		{"Retention", o.Retention},
		{"RetentionInterval", o.RetentionInterval},
		{"Publish.Timeout", o.Publish.Timeout},
		{"Publish.DelayThreshold", o.Publish.DelayThreshold},
		{"Publish.SubscriptionCheckInterval", o.Publish.SubscriptionCheckInterval},
		{"Log.StandbyRetry", o.Log.StandbyRetry},
		{"Log.ConfirmInterval", o.Log.ConfirmInterval},
		{"Log.Linger", o.Log.Linger},
	} {
		if d.v <= 0 {
			return optionErrorf(d.field, "must be > 0, got %s", d.v)
		}
	}
	switch {
	case o.Lease < minLease:
		return optionErrorf("Lease", "must be >= %s, got %s", minLease, o.Lease)
	case o.MaxProcessing < o.Lease:
		return optionErrorf("MaxProcessing", "%s must be >= Options.Lease %s", o.MaxProcessing, o.Lease)
	case o.MaxBackoff < o.BaseBackoff:
		return optionErrorf("MaxBackoff", "%s must be >= Options.BaseBackoff %s", o.MaxBackoff, o.BaseBackoff)
	case !o.FetchCooldownOff && o.FetchCooldown >= o.PollInterval:
		return optionErrorf("FetchCooldown", "must be below Options.PollInterval %s, got %s", o.PollInterval, o.FetchCooldown)
	case o.PartitionHeartbeat > o.Lease/3:
		return optionErrorf("PartitionHeartbeat", "must be at most %s (a third of Options.Lease; zero means a quarter), got %s",
			o.Lease/3, o.PartitionHeartbeat)
	case !(o.ReindexBloatFactor >= minReindexBloatFactor):
		return optionErrorf("ReindexBloatFactor", "must be >= %d (Options.ReindexOff turns rebuilds off), got %v", minReindexBloatFactor, o.ReindexBloatFactor)
	case o.ReindexMinBytes < 0:
		return optionErrorf("ReindexMinBytes", "must be > 0, got %d", o.ReindexMinBytes)
	case o.Jitter != "equal" && o.Jitter != "full":
		return optionErrorf("Jitter", `must be "equal" or "full", got %q`, o.Jitter)
	}
	if len(o.WorkerID) > maxWorkerIDBytes || !utf8.ValidString(o.WorkerID) || strings.ContainsFunc(o.WorkerID, unicode.IsControl) {
		return optionErrorf("WorkerID", "must be at most %d bytes of printable UTF-8, got %d bytes %.40q...", maxWorkerIDBytes, len(o.WorkerID), o.WorkerID)
	}
	for at, topic := range o.Publish.Topics {
		if strings.TrimSpace(at) == "" || strings.TrimSpace(topic) == "" {
			return optionErrorf("Publish.Topics", "has %q: %q: aggregate type and topic must be non-empty", at, topic)
		}
	}
	return o.Publish.checkSubscriptions()
}

// logNames sets the slot's and the publication's default names once
// Schema is known; the schema's name must keep them valid.
func (o *Options) logNames() error {
	orDefault(&o.Log.Slot, "eventrelay_"+o.Schema)
	orDefault(&o.Log.Publication, "eventrelay_"+o.Schema)
	for _, n := range []struct{ field, v string }{{"Log.Slot", o.Log.Slot}, {"Log.Publication", o.Log.Publication}} {
		if !logread.ValidName(n.v) {
			return optionErrorf(n.field, "%q (from Options.Schema) must be 1 to 63 lower-case letters, digits or underscores: set it", n.v)
		}
	}
	return nil
}

// fetchCooldown is the effective cooldown (0: none).
func (o Options) fetchCooldown() time.Duration {
	if o.FetchCooldownOff {
		return 0
	}
	return o.FetchCooldown
}

// indexUpkeep is when the maintenance loop rebuilds an index.
func (o Options) indexUpkeep() upkeep.IndexUpkeep {
	if o.ReindexOff {
		return upkeep.IndexUpkeep{} // BloatFactor 0: never
	}
	return upkeep.IndexUpkeep{BloatFactor: o.ReindexBloatFactor, MinBytes: o.ReindexMinBytes}
}

// publishSettings are the Pub/Sub publisher's settings.
func (p PublishOptions) publishSettings() publish.Settings {
	s := pubsub.DefaultPublishSettings
	s.DelayThreshold = p.DelayThreshold
	if p.DelayThresholdOff {
		s.DelayThreshold = 0
	}
	s.CountThreshold = p.CountThreshold
	s.NumGoroutines = p.MaxInflightRequests
	s.Timeout = p.Timeout
	return publish.Settings{Topics: p.Topics, MaxMessageBytes: p.MaxMessageBytes, ReadyTopic: p.ReadyTopic, Client: s}
}
