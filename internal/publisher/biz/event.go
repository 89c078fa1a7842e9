package biz

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Event is one claimed outbox row.
type Event struct {
	ID               int64
	EventID          uuid.UUID
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	EventType        string
	SchemaVersion    int32
	OrderingKey      string
	Topic            string
	Headers          map[string]string
	Payload          []byte
	OccurredAt       time.Time
	CreatedAt        time.Time
	// Attempts is the number of publish attempts before this claim.
	Attempts int32
}

// Batch is one claim: rows in id order, all fenced by Token.
type Batch struct {
	Token  uuid.UUID
	Events []Event
}

// IDs returns the row ids of the batch.
func (b Batch) IDs() []int64 {
	ids := make([]int64, len(b.Events))
	for i := range b.Events {
		ids[i] = b.Events[i].ID
	}
	return ids
}

// ClaimRequest asks the store for a batch.
type ClaimRequest struct {
	Worker string
	Token  uuid.UUID
	Limit  int
	Lease  time.Duration
	// Partitions are the outbox partitions to claim from (the replica's
	// own); rows of other partitions are not claimed.
	Partitions []int32
}

// Published is a row Pub/Sub accepted.
type Published struct {
	ID        int64
	MessageID string
}

// Retry is a row that failed transiently and goes back to pending.
type Retry struct {
	ID     int64
	Delay  time.Duration
	Reason errclass.Reason
	Err    string
}

// Failure is a row that ends failed. Cause is the reason of the last error
// (kept in error_history); Reason is the row's error_reason, which differs
// only for max_attempts_exceeded. Attempted is false when Pub/Sub was not
// called (e.g. an oversize message).
type Failure struct {
	ID        int64
	Reason    errclass.Reason
	Cause     errclass.Reason
	Err       string
	Attempted bool
}

// Outcomes are the results of one batch, written in one transaction.
type Outcomes struct {
	Published []Published
	Retries   []Retry
	Failures  []Failure
	// Released rows go back to pending with no attempt counted.
	Released []int64
}

// Len is the number of rows with an outcome.
func (o *Outcomes) Len() int {
	return len(o.Published) + len(o.Retries) + len(o.Failures) + len(o.Released)
}

// Applied reports what a fenced write actually changed. Fewer rows than
// asked means the claim was lost (lease expired and taken over).
type Applied struct {
	Published []PublishedRow
	Retried   int64
	Failed    int64
	Released  int64
}

// PublishedRow is a row marked published, with its commit-to-publish
// latency (published_at - created_at).
type PublishedRow struct {
	ID      int64
	Latency time.Duration
}

// Takeover is a row whose expired claim was reclaimed.
type Takeover struct {
	ID             int64
	PreviousWorker string
}

// Stats feed the gauges.
type Stats struct {
	Pending          int64
	Publishing       int64
	Stuck            int64
	Failed           int64
	OldestPendingAge time.Duration
}

// Store is the outbox as the relay uses it. Every method that takes a
// token is fenced: it changes only rows still claimed under that token.
type Store interface {
	// Claim atomically claims up to req.Limit ready rows under the
	// head-of-line rule, in id order.
	Claim(ctx context.Context, req ClaimRequest) ([]Event, error)
	// Complete writes all outcomes of a batch in one transaction.
	Complete(ctx context.Context, token uuid.UUID, o Outcomes) (Applied, error)
	// Release hands claimed rows back to pending.
	Release(ctx context.Context, token uuid.UUID, ids []int64) (int64, error)
	// ExtendLease pushes the lease of claimed rows to now + lease.
	ExtendLease(ctx context.Context, token uuid.UUID, ids []int64, lease time.Duration) (int64, error)
	// Reclaim returns expired claims of the given partitions to pending.
	Reclaim(ctx context.Context, maxProcessing time.Duration, partitions []int32) ([]Takeover, error)
	// Heartbeat renews the replica's membership and partition leases and
	// balances its partitions toward FairShare, in one transaction.
	Heartbeat(ctx context.Context, req HeartbeatRequest) (Heartbeat, error)
	// Leave releases the owned partitions and removes the membership; it
	// returns how many partitions were released.
	Leave(ctx context.Context, worker string, owned []OwnedPartition) (int64, error)
	// Stats reads the gauges.
	Stats(ctx context.Context, maxProcessing time.Duration) (Stats, error)
	// DeletePublished deletes up to limit published rows older than age.
	DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error)
	IndexStore
}

// ErrAbandoned is returned by PublishResult.Get when the caller stopped
// waiting before the result arrived: the outcome is unknown.
var ErrAbandoned = errors.New("stopped waiting for the publish result")

// PublishResult is the pending result of one publish.
type PublishResult interface {
	// Get waits for the message id. Errors are classified (errclass);
	// ErrAbandoned when ctx ended first.
	Get(ctx context.Context) (messageID string, err error)
}

// Sink publishes events. For one (topic, ordering key) messages reach
// Pub/Sub in the order of Publish calls; after a failure the key is paused
// until Resume.
type Sink interface {
	// Publish starts publishing e. A non-nil error means e was refused
	// before reaching Pub/Sub (e.g. message_too_large) and nothing was
	// sent.
	Publish(ctx context.Context, e *Event) (PublishResult, error)
	// Resume un-pauses e's ordering key after a failed publish.
	Resume(e *Event)
	// Flush sends what Publish has buffered for bundling now, instead of
	// after the bundling delay, and returns at once: the relay calls it
	// once it has handed over a whole batch, which no later Publish of the
	// batch could join. Results still arrive through each PublishResult.
	Flush()
}

// PartitionsChanged is the NOTIFY payload of AnnouncePartitions; writers
// notify with an empty payload.
const PartitionsChanged = "partitions"

// Wakeup signals that new rows may be ready (LISTEN/NOTIFY), and tells
// writers whether this relay wants to be notified (outbox_wakeups).
type Wakeup interface {
	// Listen calls wake with each notification's payload until ctx ends,
	// and with "" and PartitionsChanged whenever it (re)starts listening
	// (notifications of both kinds may have been missed).
	Listen(ctx context.Context, wake func(payload string))
	// AnnouncePartitions notifies the other relays (payload
	// PartitionsChanged) that partitions were released or are wanted, so
	// they run their heartbeat at once.
	AnnouncePartitions(ctx context.Context) error
	// Want records that relay worker is idle and wants a NOTIFY on each
	// commit for the next armedFor, or (armedFor 0) that it is busy and
	// claims again by itself. A Wakeup that does not listen ignores it.
	Want(ctx context.Context, worker string, armedFor time.Duration) error
	// Leave withdraws worker's wish when it stops.
	Leave(ctx context.Context, worker string) error
}

// Liveness records loop progress (health.Health).
type Liveness interface {
	RegisterLoop(name string, maxSilence time.Duration)
	Tick(name string)
}
