package projector

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/eventrelay/eventrelay/projection"
)

// Projection is one read model fed by one subscription. Set exactly one
// of Tx, TxBatch and Batch: the registry of its event types and the
// handlers that apply them.
type Projection struct {
	// Name labels the projection's metrics, logs, health entries and
	// dead letters (attribute "projection"). Required, unique per
	// Projector.
	Name string
	// Subscription is the Pub/Sub subscription received (an id in the
	// client's project, or a full name). Required, unique per Projector:
	// every projection needs its own subscription.
	Subscription string
	// Consumer is the inbox consumer name recording which events this
	// projection applied (default Name). Two projections of the same
	// events need different consumers.
	Consumer string
	// DeadLetterTopic receives the messages that can never be applied
	// (undecodable, unknown type or schema version, a deterministic
	// handler error), with the original body and attributes plus
	// error_reason, error, projection, delivery_attempt,
	// original_message_id and dead_lettered_at. Required (an id or a
	// full name): such a message is acked only once dead-lettered.
	DeadLetterTopic string

	// Tx applies each event in the Postgres transaction that records its
	// inbox row: a redelivered event is absorbed as a duplicate and never
	// reaches the handler. A handler that also implements
	// projection.TxBatchHandler gets consecutive events in one call.
	Tx *projection.Registry[projection.TxHandler]
	// TxBatch is Tx for handlers that apply a batch in one call
	// (projection.TxBatchHandler).
	TxBatch *projection.Registry[projection.TxBatchHandler]
	// Batch applies events to a non-transactional, idempotent read model (a
	// search index) in one HandleBatch call per handler and batch, then
	// records the inbox rows of the accepted events; events the inbox
	// already holds are skipped as duplicates.
	Batch *projection.Registry[projection.BatchHandler]

	// Batching shapes the batches (zero values take defaults).
	Batching BatchOptions
	// Classify decides permanent vs transient handler errors (default
	// projection.Classify): permanent ones are dead-lettered, transient
	// ones nacked for redelivery.
	Classify func(error) (projection.Reason, bool)
	// Tables lists the tables of Options.Schema the handlers write
	// (e.g. the read model), with SELECT, INSERT, UPDATE and DELETE.
	// Before receiving, and again after each receive failure, the
	// projection waits until inbox_events and these exist and the role
	// holds each of those privileges on them, so an unmigrated or
	// ungranted database does not dead-letter every message. With
	// Options.Health, the readiness check "schema/<projection>" names each
	// privilege missing, and "blocked/<projection>" fails while a store
	// refuses the projector's identity (permission_denied): its messages
	// are then held and applied again, never dead-lettered.
	Tables []string
	// InboxRetention deletes this projection's inbox rows once they are
	// older than it, in bounded batches (Options.InboxRetentionInterval,
	// Options.InboxRetentionBatchSize); 0 keeps them forever. An event
	// redelivered after its row was deleted is no longer absorbed by the
	// inbox: it reaches the handlers, whose version guard must skip it as
	// stale. Keep it above how long Pub/Sub may redeliver (the
	// subscription's message retention) unless the handlers are
	// version-guarded.
	InboxRetention time.Duration
}

// resourceID is a Pub/Sub topic or subscription id, or a full name.
var resourceID = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9\-_.~+%]{2,254}|projects/[^/]+/(topics|subscriptions)/[A-Za-z][A-Za-z0-9\-_.~+%]{2,254})$`)

// check fills defaults; errors name the field.
func (pr *Projection) check() error {
	if pr.Name == "" {
		return errors.New("projector: Projection.Name is required")
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("projector: projection %s: %s", pr.Name, fmt.Sprintf(format, args...))
	}
	if !resourceID.MatchString(pr.Subscription) {
		return fail("Projection.Subscription %q is not a subscription id or name", pr.Subscription)
	}
	if !resourceID.MatchString(pr.DeadLetterTopic) {
		return fail("Projection.DeadLetterTopic %q is not a topic id or name", pr.DeadLetterTopic)
	}
	if pr.Consumer == "" {
		pr.Consumer = pr.Name
	}
	appliers, routes := 0, 0
	if pr.Tx != nil {
		appliers, routes = appliers+1, len(pr.Tx.Types())
	}
	if pr.TxBatch != nil {
		appliers, routes = appliers+1, len(pr.TxBatch.Types())
	}
	if pr.Batch != nil {
		appliers, routes = appliers+1, len(pr.Batch.Types())
	}
	if appliers != 1 {
		return fail("exactly one of Projection.Tx, Projection.TxBatch and Projection.Batch must be set, got %d", appliers)
	}
	if routes == 0 {
		return fail("the registry of Projection.Tx/TxBatch/Batch has no event type registered")
	}
	return nil
}
