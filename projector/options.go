package projector

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/health"
)

// Options configure a Projector. A zero field takes the default its doc
// states (see WithDefaults), and features that can be turned off have a
// switch of their own (StallAfterOff, SubscriptionCheckOff), as in
// relay.Options; New refuses values out of range with an *OptionError.
// The `yaml` and `env` tags are the keys and variables of a daemon's
// configuration file (package settings).
type Options struct {
	// Schema is the Postgres schema holding inbox_events and the
	// projections' tables. The projector names tables unqualified, so the
	// pool's search_path must start with Schema (pgxpool.Config's
	// ConnConfig.RuntimeParams["search_path"]). Default: the first entry
	// of the pool's search_path; New fails when neither is set or they
	// differ.
	Schema string `yaml:"-"`
	// Receive is the StreamingPull flow control of every projection's
	// subscription.
	Receive ReceiveOptions `yaml:"receive"`
	// DrainTimeout bounds how long Run waits, once its context is done,
	// for in-flight messages to be settled (default 30s). Start/Stop take
	// their bound from Stop's context instead.
	DrainTimeout time.Duration `env:"PROJECTOR_SHUTDOWN_TIMEOUT" alias:"shutdown_timeout"`
	// StallAfter is how long a projection may hold received messages
	// without acking any before it counts as stalled: projector_stalled
	// is 1 and, with Health, the readiness check "stall/<name>" fails
	// (default 2m).
	StallAfter time.Duration `env:"PROJECTOR_STALL_AFTER" off:"StallAfterOff"`
	// StallAfterOff turns stall detection off.
	StallAfterOff bool `yaml:"-"`
	// SubscriptionCheckInterval is how often each projection's
	// subscription is read to see that it is still attached to a topic
	// (default 30s): a detached one is reported by
	// projector_subscription_detached and, with Health, the readiness
	// check "subscription/<name>".
	SubscriptionCheckInterval time.Duration
	// SubscriptionCheckOff never reads the subscriptions.
	SubscriptionCheckOff bool `yaml:"-"`
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Registerer receives the projector_* metrics (applied, duplicate,
	// stale-skipped, failed and dead-lettered counters, apply latency,
	// batch sizes, receive errors, inbox rows deleted by retention),
	// labelled by projection. Default: a private registry nobody scrapes.
	// One Registerer holds the metrics of one Projector.
	Registerer prometheus.Registerer
	// Health, when set, gets for every projection a loop
	// "receiver/<name>" that ticks while it receives and a readiness
	// check "receive/<name>" that fails while its subscription cannot be
	// received, "schema/<name>" that names each table privilege the role
	// lacks (the inbox's and Projection.Tables') and "blocked/<name>"
	// that fails while a store refuses the projector's identity; Stop
	// marks it draining. Mount it with health.Handler.
	Health *health.Health
	// TracerProvider records a consumer span per message, child of the
	// producer's trace context (default: the global provider).
	TracerProvider trace.TracerProvider
	// InboxRetentionInterval is the pause between the inbox retention
	// rounds of every projection with a Projection.InboxRetention
	// (default 1m).
	InboxRetentionInterval time.Duration
	// InboxRetentionBatchSize bounds each inbox retention DELETE
	// (1..100000, default 5000); a round deletes batches until one comes
	// back short.
	InboxRetentionBatchSize int
}

// ReceiveOptions are the subscriber's flow control. Zero values take the
// defaults noted on each field.
type ReceiveOptions struct {
	// MaxOutstandingMessages bounds unacked messages held per
	// subscription (default 1000).
	MaxOutstandingMessages int `env:"PROJECTOR_MAX_OUTSTANDING_MESSAGES"`
	// MaxOutstandingBytes bounds their size (1024 up to and default
	// MaxOutstandingBytesLimit: the Go client refuses a StreamingPull
	// response over 20 MiB, and the server packs a response up to this
	// many bytes).
	MaxOutstandingBytes int `env:"PROJECTOR_MAX_OUTSTANDING_BYTES"`
	// NumGoroutines is the number of StreamingPull streams per
	// subscription (1..256, default 4).
	NumGoroutines int `env:"PROJECTOR_NUM_GOROUTINES"`
	// MaxExtension bounds automatic ack deadline extension (>= 10s,
	// default 10m).
	MaxExtension time.Duration `env:"PROJECTOR_MAX_EXTENSION"`
	// AckDeadline caps every ack deadline the client asks for (10s..600s,
	// default 15s): how long the messages of a crashed projector stay
	// invisible before redelivery (on an ordered subscription their keys
	// wait that long too). A short deadline costs only extension requests;
	// a process stalled beyond it gets duplicates, which the inbox absorbs.
	AckDeadline time.Duration `env:"PROJECTOR_ACK_DEADLINE"`
	// RetryMin and RetryMax bound the pause before a failed Receive (a
	// missing subscription, a broken stream) is started again; it doubles
	// per failure (defaults 1s and 30s). Other projections keep receiving.
	RetryMin time.Duration `env:"PROJECTOR_RECEIVE_RETRY_MIN"`
	RetryMax time.Duration `env:"PROJECTOR_RECEIVE_RETRY_MAX"`
	// ExactlyOnce waits for each ack's confirmation; set it when the
	// subscription has exactly-once delivery enabled.
	ExactlyOnce bool `env:"PROJECTOR_EXACTLY_ONCE"`
}

// BatchOptions shape how a projection's messages are grouped into
// transactions (or HandleBatch calls) and how failures back off. Zero
// values take the defaults noted on each field.
type BatchOptions struct {
	// Size is the most messages per batch (1..10000, default 100).
	Size int `env:"PROJECTOR_BATCH_SIZE"`
	// Linger is how long a partial batch waits for more messages (up to
	// 10s, default 20ms).
	Linger time.Duration `env:"PROJECTOR_BATCH_LINGER"`
	// Workers is how many batches are applied concurrently (1..256,
	// default 4).
	Workers int `env:"PROJECTOR_WORKERS"`
	// Timeout bounds one batch's apply (>= 1s, default 30s).
	Timeout time.Duration `env:"PROJECTOR_BATCH_TIMEOUT"`
	// RetryBackoffMin and RetryBackoffMax bound the delay before a
	// transiently failed message is nacked; it doubles while failures
	// continue (defaults 100ms and 5s).
	RetryBackoffMin time.Duration `env:"PROJECTOR_RETRY_BACKOFF_MIN"`
	RetryBackoffMax time.Duration `env:"PROJECTOR_RETRY_BACKOFF_MAX"`
}

// WithDefaults returns o with every zero field of Receive, DrainTimeout, StallAfter,
// InboxRetentionInterval and InboxRetentionBatchSize set to the default its
// doc states. New applies it; a daemon reads its defaults from it.
func (o Options) WithDefaults() Options {
	o.Receive = o.Receive.WithDefaults()
	o.DrainTimeout = or(o.DrainTimeout, 30*time.Second)
	o.InboxRetentionInterval = or(o.InboxRetentionInterval, time.Minute)
	o.InboxRetentionBatchSize = or(o.InboxRetentionBatchSize, 5000)
	o.StallAfter = or(o.StallAfter, 2*time.Minute)
	o.SubscriptionCheckInterval = or(o.SubscriptionCheckInterval, 30*time.Second)
	return o
}

// WithDefaults returns r with every zero field set to the default its doc
// states.
func (r ReceiveOptions) WithDefaults() ReceiveOptions {
	r.MaxOutstandingMessages = or(r.MaxOutstandingMessages, 1000)
	r.MaxOutstandingBytes = or(r.MaxOutstandingBytes, MaxOutstandingBytesLimit)
	r.NumGoroutines = or(r.NumGoroutines, 4)
	r.MaxExtension = or(r.MaxExtension, 10*time.Minute)
	r.AckDeadline = or(r.AckDeadline, 15*time.Second)
	r.RetryMin = or(r.RetryMin, time.Second)
	r.RetryMax = or(r.RetryMax, 30*time.Second)
	return r
}

// WithDefaults returns b with every zero field set to the default its doc
// states. Register applies it.
func (b BatchOptions) WithDefaults() BatchOptions {
	b.Size = or(b.Size, 100)
	b.Linger = or(b.Linger, 20*time.Millisecond)
	b.Workers = or(b.Workers, 4)
	b.Timeout = or(b.Timeout, 30*time.Second)
	b.RetryBackoffMin = or(b.RetryBackoffMin, 100*time.Millisecond)
	b.RetryBackoffMax = or(b.RetryBackoffMax, 5*time.Second)
	return b
}

func or[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// OptionError is an option New or Register refuses (the same shape as
// relay.OptionError).
type OptionError struct {
	// Field is the field's path, e.g. "Options.Receive.NumGoroutines" or
	// "Projection.Batching.Size".
	Field string
	// Problem says what is wrong, e.g. "must be 1..256, got 999"; other
	// fields it mentions are written the same way.
	Problem string
}

func (e *OptionError) Error() string { return "projector: " + e.Field + " " + e.Problem }

func invalid(field, format string, args ...any) error {
	return &OptionError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Validate checks o with its defaults applied (New calls it): an option
// out of range is an *OptionError.
func (o Options) Validate() error {
	o = o.WithDefaults()
	r := o.Receive
	switch {
	case r.MaxOutstandingMessages < 1:
		return invalid("Options.Receive.MaxOutstandingMessages", "must be >= 1, got %d", r.MaxOutstandingMessages)
	case r.MaxOutstandingBytes < 1024 || r.MaxOutstandingBytes > MaxOutstandingBytesLimit:
		return invalid("Options.Receive.MaxOutstandingBytes", "must be 1024..%d (larger StreamingPull responses exceed the client's 20 MiB receive limit), got %d",
			MaxOutstandingBytesLimit, r.MaxOutstandingBytes)
	case r.NumGoroutines < 1 || r.NumGoroutines > 256:
		return invalid("Options.Receive.NumGoroutines", "must be 1..256, got %d", r.NumGoroutines)
	case r.MaxExtension < 10*time.Second:
		return invalid("Options.Receive.MaxExtension", "must be >= 10s, got %s", r.MaxExtension)
	case r.AckDeadline < 10*time.Second || r.AckDeadline > 600*time.Second:
		return invalid("Options.Receive.AckDeadline", "must be 10s..600s, got %s", r.AckDeadline)
	case r.RetryMin <= 0:
		return invalid("Options.Receive.RetryMin", "must be > 0, got %s", r.RetryMin)
	case r.RetryMax < r.RetryMin:
		return invalid("Options.Receive.RetryMax", "must be >= Options.Receive.RetryMin (%s), got %s", r.RetryMin, r.RetryMax)
	case o.StallAfter <= 0:
		return invalid("Options.StallAfter", "must be > 0, got %s", o.StallAfter)
	case o.SubscriptionCheckInterval <= 0:
		return invalid("Options.SubscriptionCheckInterval", "must be > 0, got %s", o.SubscriptionCheckInterval)
	case o.DrainTimeout < 0:
		return invalid("Options.DrainTimeout", "must be >= 0, got %s", o.DrainTimeout)
	case o.InboxRetentionInterval <= 0:
		return invalid("Options.InboxRetentionInterval", "must be > 0, got %s", o.InboxRetentionInterval)
	case o.InboxRetentionBatchSize < 1 || o.InboxRetentionBatchSize > 100000:
		return invalid("Options.InboxRetentionBatchSize", "must be 1..100000, got %d", o.InboxRetentionBatchSize)
	}
	return nil
}

// Validate checks b with its defaults applied (Register calls it): an
// option out of range is an *OptionError.
func (b BatchOptions) Validate() error {
	b = b.WithDefaults()
	switch {
	case b.Size < 1 || b.Size > 10000:
		return invalid("Projection.Batching.Size", "must be 1..10000, got %d", b.Size)
	case b.Linger < 0 || b.Linger > 10*time.Second:
		return invalid("Projection.Batching.Linger", "must be 0..10s, got %s", b.Linger)
	case b.Workers < 1 || b.Workers > 256:
		return invalid("Projection.Batching.Workers", "must be 1..256, got %d", b.Workers)
	case b.Timeout < time.Second:
		return invalid("Projection.Batching.Timeout", "must be >= 1s, got %s", b.Timeout)
	case b.RetryBackoffMin < 0:
		return invalid("Projection.Batching.RetryBackoffMin", "must be >= 0, got %s", b.RetryBackoffMin)
	case b.RetryBackoffMax < b.RetryBackoffMin:
		return invalid("Projection.Batching.RetryBackoffMax", "must be >= Projection.Batching.RetryBackoffMin (%s), got %s", b.RetryBackoffMin, b.RetryBackoffMax)
	}
	return nil
}

// MaxOutstandingBytesLimit is the largest ReceiveOptions.MaxOutstandingBytes
// (10 MiB). The server packs each StreamingPull response up to this many
// bytes, and the Go client refuses a response over 20 MiB (a per-call gRPC
// limit it sets itself) with ResourceExhausted: at 10 MiB a response holds
// at most two messages of Pub/Sub's 10 MB maximum.
const MaxOutstandingBytesLimit = 10 << 20
