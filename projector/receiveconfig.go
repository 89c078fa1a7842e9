package projector

import "time"

// The parameters below are filled and range-checked by the projector
// package (see projector.Options, whose field docs state each default and
// range); the engine only fills the zero fields of a direct caller, with
// the same defaults.

// MaxOutstandingBytesLimit is the largest ReceiveConfig.MaxOutstandingBytes
// (10 MiB). The server packs each StreamingPull response up to this many
// bytes, and the Go client refuses a response over 20 MiB (a per-call gRPC
// limit it sets itself) with ResourceExhausted: at 10 MiB a response holds
// at most two messages of Pub/Sub's 10 MB maximum.
const MaxOutstandingBytesLimit = 10 << 20

// ReceiveConfig is the subscriber's flow control.
type ReceiveConfig struct {
	MaxOutstandingMessages int
	MaxOutstandingBytes    int
	NumGoroutines          int
	MaxExtension           time.Duration
	// AckDeadline caps each ack deadline the client asks for, on the stream
	// and in every extension. It bounds how long the messages a stopped or
	// crashed projector held, or that were in flight to it when its stream
	// closed, stay invisible before redelivery; on an ordered subscription
	// their keys wait that long too. The library's own choice (the 99th
	// percentile of receipt-to-ack time, up to 10 minutes) grows to
	// minutes under a backlog of ordered messages. A short deadline costs
	// only extension requests; a process stalled beyond it gets
	// duplicates, which the inbox absorbs.
	AckDeadline time.Duration
	// RetryMin and RetryMax bound the pause before Receive is started again
	// after it failed; it doubles per failure and resets once a receive has
	// run for a while.
	RetryMin, RetryMax time.Duration
	// ExactlyOnce acks with AckWithResult and waits for the answer.
	ExactlyOnce bool
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c ReceiveConfig) WithDefaults() ReceiveConfig {
	c.MaxOutstandingMessages = or(c.MaxOutstandingMessages, 1000)
	c.MaxOutstandingBytes = or(c.MaxOutstandingBytes, MaxOutstandingBytesLimit)
	c.NumGoroutines = or(c.NumGoroutines, 4)
	c.MaxExtension = or(c.MaxExtension, 10*time.Minute)
	c.AckDeadline = or(c.AckDeadline, 15*time.Second)
	c.RetryMin = or(c.RetryMin, time.Second)
	c.RetryMax = or(c.RetryMax, 30*time.Second)
	return c
}

// BatchConfig shapes how messages are grouped into transactions (or bulk
// requests) and how failures back off.
type BatchConfig struct {
	Size    int
	Linger  time.Duration
	Workers int
	Timeout time.Duration
	// RetryBackoffMin/Max bound the delay before a transiently failed
	// message is nacked; it doubles while failures continue and resets on
	// the first success, so an outage does not turn into a redelivery
	// storm.
	RetryBackoffMin, RetryBackoffMax time.Duration
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c BatchConfig) WithDefaults() BatchConfig {
	c.Size = or(c.Size, 100)
	c.Linger = or(c.Linger, 20*time.Millisecond)
	c.Workers = or(c.Workers, 4)
	c.Timeout = or(c.Timeout, 30*time.Second)
	c.RetryBackoffMin = or(c.RetryBackoffMin, 100*time.Millisecond)
	c.RetryBackoffMax = or(c.RetryBackoffMax, 5*time.Second)
	return c
}

// RetentionConfig bounds how long a consumer's inbox rows are kept. The
// inbox only has to absorb redeliveries; an event redelivered after its
// row was deleted meets the read model's version guard instead and is
// skipped as stale.
type RetentionConfig struct {
	// Age keeps inbox rows this long after they were processed (0: keep
	// forever).
	Age time.Duration
	// Interval is the pause between deletion rounds.
	Interval time.Duration
	// BatchSize bounds each DELETE.
	BatchSize int
}

// WithDefaults returns c with its zero Interval and BatchSize set to their
// defaults (Age 0 stays: keep forever).
func (c RetentionConfig) WithDefaults() RetentionConfig {
	c.Interval = or(c.Interval, time.Minute)
	c.BatchSize = or(c.BatchSize, 5000)
	return c
}

func or[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
