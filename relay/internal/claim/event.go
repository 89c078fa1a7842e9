package claim

import (
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

// Request asks the store for a batch.
type Request struct {
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

// Rescheduled is a row whose publish failed transiently: it goes back to
// pending, to be claimed again after Delay. Held rows failed for the
// environment's fault (their topic is held): no attempt is counted.
type Rescheduled struct {
	ID     int64
	Delay  time.Duration
	Reason errclass.Reason
	Err    string
	Held   bool
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
	Published   []Published
	Rescheduled []Rescheduled
	Failures    []Failure
	// Released rows go back to pending with no attempt counted.
	Released []int64
}

// Len is the number of rows with an outcome.
func (o *Outcomes) Len() int {
	return len(o.Published) + len(o.Rescheduled) + len(o.Failures) + len(o.Released)
}

// Applied reports what a fenced write actually changed. Fewer rows than
// asked means the claim was lost (lease expired and taken over).
type Applied struct {
	Published   []PublishedRow
	Rescheduled int64
	Failed      int64
	Released    int64
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
