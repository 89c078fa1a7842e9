package relay

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
)

// The ports of the engine: what the claim loop, the workers and the
// upkeep loops need from Postgres, Pub/Sub and the wake-ups. The
// adapters live under internal/ (claim, upkeep, publish, wakeup);
// partition ownership is internal/partitions.

// claims is the outbox as the claim loop and the workers use it
// (claim.Store). Every method that takes a token is fenced: it changes
// only rows still claimed under that token.
type claims interface {
	// Claim atomically claims up to req.Limit ready rows under the
	// head-of-line rule, in id order.
	Claim(ctx context.Context, req claim.Request) ([]claim.Event, error)
	// Mark records all outcomes of a batch in one transaction.
	Mark(ctx context.Context, token uuid.UUID, o claim.Outcomes) (claim.Applied, error)
	// Release hands claimed rows back to pending.
	Release(ctx context.Context, token uuid.UUID, ids []int64) (int64, error)
	// ExtendLease pushes the lease of claimed rows to now + lease.
	ExtendLease(ctx context.Context, token uuid.UUID, ids []int64, lease time.Duration) (int64, error)
	// Reclaim returns expired claims of the given partitions to pending.
	Reclaim(ctx context.Context, maxProcessing time.Duration, partitions []int32) ([]claim.Takeover, error)
	// Refusal describes a missing-privilege error of one of these
	// statements: the table and the privileges the role lacks on it.
	Refusal(ctx context.Context, err error) string
}

// outboxUpkeep is the outbox's upkeep (upkeep.Store): the gauges,
// retention and the outbox's own indexes (a fixed list: adopters' extra
// indexes are never touched).
type outboxUpkeep interface {
	// Stats reads the gauges.
	Stats(ctx context.Context, maxProcessing time.Duration) (upkeep.Stats, error)
	// DeletePublished deletes up to limit published rows older than age.
	DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error)
	// OutboxIndexes describes the outbox's valid indexes.
	OutboxIndexes(ctx context.Context) ([]upkeep.IndexStat, error)
	// RebuildIndexes rebuilds the named indexes without blocking writes,
	// holding the schema's maintenance lock; locked is false, and nothing
	// is done, when another session holds it.
	RebuildIndexes(ctx context.Context, names []string) (locked bool, done []upkeep.Rebuild, err error)
}

// publisher publishes claimed rows to Pub/Sub (publish.Publisher). For
// one (topic, ordering key) messages reach Pub/Sub in the order of
// Publish calls; after a failure the key is paused until Resume.
type publisher interface {
	// Publish starts publishing e. A non-nil error means e was refused
	// before reaching Pub/Sub (e.g. message_too_large) and nothing was
	// sent.
	Publish(ctx context.Context, e *claim.Event) (publish.Result, error)
	// Resume un-pauses e's ordering key after a failed publish.
	Resume(e *claim.Event)
	// Topic is the topic e is published to.
	Topic(e *claim.Event) string
	// Flush sends what Publish has buffered for bundling now, instead of
	// after the bundling delay, and returns at once: the relay calls it
	// once it has handed over a whole batch, which no later Publish of the
	// batch could join. Results still arrive through each Result.
	Flush()
}

// wakeups signals that new rows may be ready (LISTEN/NOTIFY), and tells
// writers whether this relay wants to be notified (outbox_wakeups); see
// wakeup.Listener.
type wakeups interface {
	// Listen calls wake with each notification's payload until ctx ends,
	// and with "" and wakeup.PartitionsChanged whenever it (re)starts
	// listening (notifications of both kinds may have been missed).
	Listen(ctx context.Context, wake func(payload string))
	// AnnouncePartitions notifies the other relays (payload
	// wakeup.PartitionsChanged) that partitions were released or are
	// wanted, so they run their heartbeat at once.
	AnnouncePartitions(ctx context.Context) error
	// Want records that relay worker is idle and wants a NOTIFY on each
	// commit for the next armedFor, or (armedFor 0) that it is busy and
	// claims again by itself. A wakeups that does not listen ignores it.
	Want(ctx context.Context, worker string, armedFor time.Duration) error
	// Unannounced reports whether a writer that read every relay busy
	// (and so commits without a NOTIFY) is still in flight, without
	// waiting for it.
	Unannounced(ctx context.Context) (bool, error)
	// Leave withdraws worker's wish when it stops.
	Leave(ctx context.Context, worker string) error
}

// liveness records loop progress (health.Health).
type liveness interface {
	RegisterLoop(name string, maxSilence time.Duration)
	Tick(name string)
}
