package projector

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/conf"
	engine "github.com/eventrelay/eventrelay/internal/projector"
)

// Options configure a Projector. Zero values take the documented defaults;
// New refuses values out of range with an error naming the field.
type Options struct {
	// Schema is the Postgres schema holding inbox_events and the
	// projections' tables. The projector names tables unqualified, so the
	// pool's search_path must start with Schema (pgxpool.Config's
	// ConnConfig.RuntimeParams["search_path"]). Default: the first entry
	// of the pool's search_path; New fails when neither is set or they
	// differ.
	Schema string
	// Receive is the StreamingPull flow control of every projection's
	// subscription.
	Receive ReceiveOptions
	// DrainTimeout bounds how long Run waits, once its context is done,
	// for in-flight messages to be settled (default 30s). Start/Stop take
	// their bound from Stop's context instead.
	DrainTimeout time.Duration
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
	// received; Stop marks it draining. Mount it with health.Handler.
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

// retention is the inbox retention of a projection keeping its rows for
// age.
func (o Options) retention(age time.Duration) engine.RetentionConfig {
	return engine.RetentionConfig{Age: conf.Duration(age), Interval: conf.Duration(o.InboxRetentionInterval),
		BatchSize: o.InboxRetentionBatchSize}
}

// retentionNamer names the fields of engine.RetentionConfig as the
// options that set them.
func retentionNamer(field string) string {
	switch field {
	case "Age":
		return "Projection.InboxRetention"
	case "Interval":
		return "Options.InboxRetentionInterval"
	}
	return "Options.InboxRetentionBatchSize"
}

// ReceiveOptions are the subscriber's flow control. Zero values take the
// defaults noted on each field.
type ReceiveOptions struct {
	// MaxOutstandingMessages bounds unacked messages held per
	// subscription (default 1000).
	MaxOutstandingMessages int
	// MaxOutstandingBytes bounds their size (1024 up to and default
	// 10 MiB: the Go client refuses a StreamingPull response over 20 MiB,
	// and the server packs a response up to this many bytes).
	MaxOutstandingBytes int
	// NumGoroutines is the number of StreamingPull streams per
	// subscription (1..256, default 4).
	NumGoroutines int
	// MaxExtension bounds automatic ack deadline extension (>= 10s,
	// default 10m).
	MaxExtension time.Duration
	// AckDeadline caps every ack deadline the client asks for (10s..600s,
	// default 15s): how long the messages of a crashed projector stay
	// invisible before redelivery.
	AckDeadline time.Duration
	// RetryMin and RetryMax bound the pause before a failed Receive (a
	// missing subscription, a broken stream) is started again; it doubles
	// per failure (defaults 1s and 30s). Other projections keep receiving.
	RetryMin, RetryMax time.Duration
	// ExactlyOnce waits for each ack's confirmation; set it when the
	// subscription has exactly-once delivery enabled.
	ExactlyOnce bool
}

// BatchOptions shape how a projection's messages are grouped into
// transactions (or HandleBatch calls) and how failures back off. Zero
// values take the defaults noted on each field.
type BatchOptions struct {
	// Size is the most messages per batch (1..10000, default 100).
	Size int
	// Linger is how long a partial batch waits for more messages (0..10s,
	// default 20ms).
	Linger time.Duration
	// Workers is how many batches are applied concurrently (1..256,
	// default 4).
	Workers int
	// Timeout bounds one batch's apply (>= 1s, default 30s).
	Timeout time.Duration
	// RetryBackoffMin and RetryBackoffMax bound the delay before a
	// transiently failed message is nacked; it doubles while failures
	// continue (defaults 100ms and 5s).
	RetryBackoffMin, RetryBackoffMax time.Duration
}

// fieldNamer names option fields under prefix in validation errors.
func fieldNamer(prefix string) engine.Namer {
	return func(field string) string { return prefix + "." + field }
}

func (o ReceiveOptions) config() engine.ReceiveConfig {
	return engine.ReceiveConfig{
		MaxOutstandingMessages: o.MaxOutstandingMessages,
		MaxOutstandingBytes:    o.MaxOutstandingBytes,
		NumGoroutines:          o.NumGoroutines,
		MaxExtension:           conf.Duration(o.MaxExtension),
		AckDeadline:            conf.Duration(o.AckDeadline),
		RetryMin:               conf.Duration(o.RetryMin),
		RetryMax:               conf.Duration(o.RetryMax),
		ExactlyOnce:            o.ExactlyOnce,
	}
}

func (o BatchOptions) config() engine.BatchConfig {
	return engine.BatchConfig{
		Size:            o.Size,
		Linger:          conf.Duration(o.Linger),
		Workers:         o.Workers,
		Timeout:         conf.Duration(o.Timeout),
		RetryBackoffMin: conf.Duration(o.RetryBackoffMin),
		RetryBackoffMax: conf.Duration(o.RetryBackoffMax),
	}
}
