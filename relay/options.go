package relay

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/health"
)

// DefaultSchema is the schema Options.Schema defaults to (the one the
// shipped daemons use when DATABASE_SCHEMA is unset).
const DefaultSchema = "catalog"

// Options configures a Relay. It is a plain struct: zero values take the
// documented defaults (those of cmd/publisher); New validates the result
// and its errors name the field ("relay: Options.Lease must be ...").
type Options struct {
	// Schema holds outbox_events (default DefaultSchema). The relay's SQL
	// is unqualified: the pool's search_path must start with Schema (see
	// PoolConfig); New refuses a pool configured otherwise.
	Schema string
	// NotifyChannel is the LISTEN channel (default
	// outbox.NotifyChannelFor(Schema), the channel an outbox.Writer on
	// Schema notifies by default). Set it only together with the writers'
	// outbox.Config.NotifyChannel.
	NotifyChannel string
	// ListenOff turns LISTEN off: the relay only polls every PollInterval.
	ListenOff bool
	// FetchCooldown is the least time between two claims that were not
	// forced by a full batch (default 40ms; negative: none, a claim on
	// every wake-up). Wake-ups within it coalesce into one claim; while
	// claims return rows the relay claims again after it by itself and
	// asks writers not to notify (outbox_wakeups), which spares their
	// commits NOTIFY's database-wide lock. After an idle period a NOTIFY
	// is answered at once.
	FetchCooldown time.Duration

	// WorkerID names this replica in locked_by (default hostname-pid).
	WorkerID string
	// Concurrency is the number of claimed batches in flight (default 4,
	// 1..256).
	Concurrency int
	// BulkSize is the maximum number of rows per claim (default 500,
	// 1..10000).
	BulkSize int
	// MaxAttempts is the number of publish attempts before a row fails
	// with max_attempts_exceeded (default 12, 1..1000).
	MaxAttempts int
	// PollInterval is the fallback when no NOTIFY arrives (default 1s).
	PollInterval time.Duration
	// Lease is how long a claim is valid without extension (default 30s,
	// at least 500ms).
	Lease time.Duration
	// ReclaimInterval is how often expired claims are taken over (default
	// 10s).
	ReclaimInterval time.Duration
	// MaxProcessing bounds a claim even when its lease keeps being
	// extended (default 5m, at least Lease).
	MaxProcessing time.Duration
	// BaseBackoff and MaxBackoff bound the retry delay
	// min(MaxBackoff, BaseBackoff * 2^attempts), jittered (defaults 1s and
	// 5m).
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// Jitter is "equal" (delay in [d/2, d], the default) or "full" (delay
	// in [0, d]).
	Jitter string
	// StatsInterval is how often the lag/age/stuck gauges are refreshed
	// (default 10s).
	StatsInterval time.Duration
	// GracePeriod bounds the drain on Stop (default 20s): in-flight
	// batches finish within it, then unfinished rows are handed back.
	GracePeriod time.Duration
	// Retention keeps published rows this long before deleting them
	// (default 72h; negative: never delete).
	Retention time.Duration
	// RetentionInterval is how often old published rows are deleted
	// (default 1m).
	RetentionInterval time.Duration
	// RetentionBatchSize bounds each DELETE (default 5000).
	RetentionBatchSize int

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
	// (Schema holds the outbox table) and "pubsub" (ReadyTopic answers);
	// Stop marks it draining. Mount it with health.Handler. Checks and
	// loops are keyed by name: a second relay on the same Health replaces
	// the first one's.
	Health *health.Health
	// TracerProvider makes the producer spans (default: the global one).
	TracerProvider trace.TracerProvider
}

// PublishOptions configures publishing. Zero values take the defaults.
type PublishOptions struct {
	// Topics routes aggregate types to topic ids, overriding the row's
	// topic; unlisted aggregate types use the row's topic.
	Topics map[string]string
	// MaxMessageBytes fails larger messages with message_too_large
	// without calling Pub/Sub (default and maximum 10,000,000).
	MaxMessageBytes int
	// Timeout bounds one publish; the client retries transient errors
	// within it (default 20s).
	Timeout time.Duration
	// DelayThreshold is how long an ordering key's bundle waits for more
	// messages (default 2ms; negative: no wait).
	DelayThreshold time.Duration
	// CountThreshold is the most messages per Publish request (default
	// 100, 1..1000).
	CountThreshold int
	// MaxInflightRequests is how many Publish requests (each of one
	// ordering key) are in flight at once per topic (default 256).
	MaxInflightRequests int
	// ReadyTopic is probed by the "pubsub" readiness check (GetTopic).
	// Empty: list one page of topics.
	ReadyTopic string
}
