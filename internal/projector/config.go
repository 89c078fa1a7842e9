package projector

import (
	"fmt"
	"reflect"
	"time"

	"github.com/eventrelay/eventrelay/internal/conf"
)

// MaxOutstandingBytesLimit is the largest ReceiveConfig.MaxOutstandingBytes
// (10 MiB): see that field.
const MaxOutstandingBytesLimit = 10 << 20

// ReceiveConfig is the subscriber's flow control. Zero values take the
// defaults noted on each field.
type ReceiveConfig struct {
	// MaxOutstandingMessages bounds unacked messages held (default 1000).
	MaxOutstandingMessages int `yaml:"max_outstanding_messages" env:"PROJECTOR_MAX_OUTSTANDING_MESSAGES"`
	// MaxOutstandingBytes bounds their size (default and most 10 MiB). The
	// server also packs each StreamingPull response up to this many bytes,
	// and the Go client refuses a response over 20 MiB (a per-call gRPC
	// limit it sets itself) with ResourceExhausted: with 100 MB, three 9 MB
	// messages waiting on one subscription stopped it. At 10 MiB a response
	// holds at most two messages of Pub/Sub's 10 MB maximum.
	MaxOutstandingBytes int `yaml:"max_outstanding_bytes" env:"PROJECTOR_MAX_OUTSTANDING_BYTES"`
	// NumGoroutines is the number of StreamingPull streams (default 4).
	NumGoroutines int `yaml:"num_goroutines" env:"PROJECTOR_NUM_GOROUTINES"`
	// MaxExtension bounds automatic ack deadline extension (default 10m).
	MaxExtension conf.Duration `yaml:"max_extension" env:"PROJECTOR_MAX_EXTENSION"`
	// AckDeadline caps each ack deadline the client asks for, on the stream
	// and in every extension (10s..600s, default 15s). It bounds how long
	// the messages a stopped or crashed projector held, or that were in
	// flight to it when its stream closed, stay invisible before
	// redelivery; on an ordered subscription their keys wait that long too.
	// The library's own choice (never used here) is the 99th percentile
	// of receipt-to-ack time, up to 10 minutes: under a backlog of ordered
	// messages that grows to minutes, and one graceful restart stalled
	// every key for 41s in a 2,000-message experiment (2 minutes and more in
	// a CI run), against 9s with 10s. A short deadline costs only extension
	// requests (the client extends held messages before the deadline);
	// a process stalled beyond it gets duplicates, which the inbox absorbs.
	AckDeadline conf.Duration `yaml:"ack_deadline" env:"PROJECTOR_ACK_DEADLINE"`
	// RetryMin and RetryMax bound the pause before Receive is started again
	// after it failed (the subscription is missing, the stream broke with an
	// error the client does not retry itself): it doubles per failure and
	// resets once a receive has run for a while (defaults 1s and 30s). The
	// other projections keep receiving meanwhile; /readyz names the failing
	// one.
	RetryMin conf.Duration `yaml:"retry_min" env:"PROJECTOR_RECEIVE_RETRY_MIN"`
	RetryMax conf.Duration `yaml:"retry_max" env:"PROJECTOR_RECEIVE_RETRY_MAX"`
	// ExactlyOnce acks with AckWithResult and waits for the answer; set it
	// when the subscription has exactly-once delivery enabled.
	ExactlyOnce bool `yaml:"exactly_once" env:"PROJECTOR_EXACTLY_ONCE"`
}

// DefaultReceiveConfig is what a zero ReceiveConfig validates to: the
// defaults a daemon configuration starts from, so that an explicit 0 there
// is refused rather than silently defaulted (see conf.Load).
func DefaultReceiveConfig() ReceiveConfig {
	var c ReceiveConfig
	_ = c.Validate("receive") // the defaults are valid
	return c
}

// Namer names a field of ReceiveConfig or BatchConfig, given its Go name,
// in a validation error: as a configuration key for a daemon, as an option
// field for a library (see Check).
type Namer func(field string) string

// KeyNamer names the fields of config (a ReceiveConfig or BatchConfig) by
// their YAML key under prefix and their environment variable, e.g.
// "receive.num_goroutines (PROJECTOR_NUM_GOROUTINES)".
func KeyNamer(prefix string, config any) Namer {
	t := reflect.TypeOf(config)
	return func(field string) string {
		f, _ := t.FieldByName(field)
		name := prefix + "." + conf.KeyOf(f)
		if env := f.Tag.Get("env"); env != "" {
			name += " (" + env + ")"
		}
		return name
	}
}

// Validate is Check with KeyNamer(prefix): errors name the key under
// prefix and its environment variable.
func (c *ReceiveConfig) Validate(prefix string) error {
	return c.Check(KeyNamer(prefix, *c))
}

// Check fills defaults and checks the ranges; errors name the field by
// name.
func (c *ReceiveConfig) Check(name Namer) error {
	if c.MaxOutstandingMessages == 0 {
		c.MaxOutstandingMessages = 1000
	}
	if c.MaxOutstandingBytes == 0 {
		c.MaxOutstandingBytes = MaxOutstandingBytesLimit
	}
	if c.NumGoroutines == 0 {
		c.NumGoroutines = 4
	}
	if c.MaxExtension == 0 {
		c.MaxExtension = conf.Duration(10 * time.Minute)
	}
	if c.AckDeadline == 0 {
		c.AckDeadline = conf.Duration(15 * time.Second)
	}
	if c.RetryMin == 0 {
		c.RetryMin = conf.Duration(time.Second)
	}
	if c.RetryMax == 0 {
		c.RetryMax = conf.Duration(30 * time.Second)
	}
	switch {
	case c.MaxOutstandingMessages < 1:
		return fmt.Errorf("%s must be >= 1, got %d", name("MaxOutstandingMessages"), c.MaxOutstandingMessages)
	case c.MaxOutstandingBytes < 1024 || c.MaxOutstandingBytes > MaxOutstandingBytesLimit:
		return fmt.Errorf("%s must be 1024..%d (larger StreamingPull responses exceed the client's 20 MiB receive limit), got %d",
			name("MaxOutstandingBytes"), MaxOutstandingBytesLimit, c.MaxOutstandingBytes)
	case c.NumGoroutines < 1 || c.NumGoroutines > 256:
		return fmt.Errorf("%s must be 1..256, got %d", name("NumGoroutines"), c.NumGoroutines)
	case c.MaxExtension.D() < 10*time.Second:
		return fmt.Errorf("%s must be >= 10s, got %s", name("MaxExtension"), c.MaxExtension)
	case c.AckDeadline.D() < 10*time.Second || c.AckDeadline.D() > 600*time.Second:
		return fmt.Errorf("%s must be 10s..600s, got %s", name("AckDeadline"), c.AckDeadline)
	case c.RetryMin.D() <= 0:
		return fmt.Errorf("%s must be > 0, got %s", name("RetryMin"), c.RetryMin)
	case c.RetryMax.D() < c.RetryMin.D():
		return fmt.Errorf("%s must be >= %s, got %s", name("RetryMax"), name("RetryMin"), c.RetryMax)
	}
	return nil
}

// BatchConfig shapes how messages are grouped into transactions (or bulk
// requests) and how failures back off.
type BatchConfig struct {
	// Size is the most messages per batch (default 100; 1 = one transaction
	// per message).
	Size int `yaml:"size" env:"PROJECTOR_BATCH_SIZE"`
	// Linger is how long a partial batch waits for more messages (default
	// 20ms).
	Linger conf.Duration `yaml:"linger" env:"PROJECTOR_BATCH_LINGER"`
	// Workers is how many batches are applied concurrently (default 4).
	Workers int `yaml:"workers" env:"PROJECTOR_WORKERS"`
	// Timeout bounds one batch's apply (default 30s).
	Timeout conf.Duration `yaml:"timeout" env:"PROJECTOR_BATCH_TIMEOUT"`
	// RetryBackoffMin/Max bound the delay before a transiently failed
	// message is nacked; it doubles while failures continue and resets on
	// the first success, so an outage does not turn into a redelivery storm
	// (defaults 100ms and 5s).
	RetryBackoffMin conf.Duration `yaml:"retry_backoff_min" env:"PROJECTOR_RETRY_BACKOFF_MIN"`
	RetryBackoffMax conf.Duration `yaml:"retry_backoff_max" env:"PROJECTOR_RETRY_BACKOFF_MAX"`
}

// DefaultBatchConfig is what a zero BatchConfig validates to (see
// DefaultReceiveConfig).
func DefaultBatchConfig() BatchConfig {
	var c BatchConfig
	_ = c.Validate("batch") // the defaults are valid
	return c
}

// Validate is Check with KeyNamer(prefix).
func (c *BatchConfig) Validate(prefix string) error {
	return c.Check(KeyNamer(prefix, *c))
}

// Check fills defaults and checks the ranges; errors name the field by
// name.
func (c *BatchConfig) Check(name Namer) error {
	if c.Size == 0 {
		c.Size = 100
	}
	if c.Linger == 0 {
		c.Linger = conf.Duration(20 * time.Millisecond)
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
	if c.Timeout == 0 {
		c.Timeout = conf.Duration(30 * time.Second)
	}
	if c.RetryBackoffMin == 0 {
		c.RetryBackoffMin = conf.Duration(100 * time.Millisecond)
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = conf.Duration(5 * time.Second)
	}
	switch {
	case c.Size < 1 || c.Size > 10000:
		return fmt.Errorf("%s must be 1..10000, got %d", name("Size"), c.Size)
	case c.Linger.D() < 0 || c.Linger.D() > 10*time.Second:
		return fmt.Errorf("%s must be 0..10s, got %s", name("Linger"), c.Linger)
	case c.Workers < 1 || c.Workers > 256:
		return fmt.Errorf("%s must be 1..256, got %d", name("Workers"), c.Workers)
	case c.Timeout.D() < time.Second:
		return fmt.Errorf("%s must be >= 1s, got %s", name("Timeout"), c.Timeout)
	case c.RetryBackoffMin.D() < 0:
		return fmt.Errorf("%s must be >= 0, got %s", name("RetryBackoffMin"), c.RetryBackoffMin)
	case c.RetryBackoffMax.D() < c.RetryBackoffMin.D():
		return fmt.Errorf("%s must be >= %s, got %s", name("RetryBackoffMax"), name("RetryBackoffMin"), c.RetryBackoffMax)
	}
	return nil
}
