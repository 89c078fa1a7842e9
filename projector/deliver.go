package projector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/projection"
)

// Outcome is how a delivered message was settled.
type Outcome string

// The outcomes of a delivery.
const (
	// OutcomeApplied: the handler applied the event; the message is acked.
	OutcomeApplied Outcome = "applied"
	// OutcomeStale: the handler skipped the event as older than the read
	// model; acked.
	OutcomeStale Outcome = "stale"
	// OutcomeDuplicate: the consumer's inbox already held the event; the
	// handler did not run; acked.
	OutcomeDuplicate Outcome = "duplicate"
	// OutcomeDeadLettered: a permanent failure, published to the
	// projection's DeadLetterTopic; acked.
	OutcomeDeadLettered Outcome = "dead_lettered"
	// OutcomeRetry: a transient failure (or a dead letter that could not
	// be published); the message is nacked and Pub/Sub would redeliver it.
	OutcomeRetry Outcome = "retry"
)

// Delivery is the settlement of one message given to Deliver.
type Delivery struct {
	// MessageID is the message's ID.
	MessageID string
	Outcome   Outcome
	// Reason classifies Err (OutcomeDeadLettered and OutcomeRetry).
	Reason projection.Reason
	// Err is the failure of a dead-lettered or retried message.
	Err error
}

// Deliver applies msgs to the registered projection named projection as
// if they had been received from its subscription, and returns how each
// was settled, in the order of msgs. It is the path of a live message
// without the subscription: the attributes are parsed and the event
// resolved through the projection's registry, the inbox absorbs events the
// consumer already applied, batches form as configured
// (Projection.Batching), permanent failures are published to the
// projection's DeadLetterTopic and counted like received ones (Stats,
// the projector_* metrics). Where a received message would be acked or
// nacked, Deliver reports the Outcome instead; a message reported
// OutcomeRetry can be given to Deliver again, as Pub/Sub would redeliver
// it (with DeliveryAttempt set, when the test wants the attempt counted).
//
// At most Options.Receive.MaxOutstandingMessages messages are in flight at
// once, as under the subscriber's flow control. Deliver works before and
// after Start, beside receiving, and from several goroutines; it fails for
// a projection that is not registered and after Stop. When ctx ends,
// messages not yet begun are reported OutcomeRetry with ctx's error; the
// ones begun are finished and settled.
//
// Deliver is meant for tests and benchmarks of a service's projections:
// it needs no subscription, only the dead-letter topic when a message can
// fail permanently. Call Stop when done: it ends the projections' batch
// workers, also when Start was never called.
func (p *Projector) Deliver(ctx context.Context, projection string, msgs ...*pubsub.Message) ([]Delivery, error) {
	p.mu.Lock()
	e, stopped := p.engines[projection], p.stopped
	p.mu.Unlock()
	switch {
	case e == nil:
		return nil, fmt.Errorf("projector: Deliver: no projection %q registered", projection)
	case stopped:
		return nil, errors.New("projector: Deliver after Stop")
	}
	out := make([]Delivery, len(msgs))
	slots := make(chan struct{}, p.opts.Receive.MaxOutstandingMessages)
	var wg sync.WaitGroup
	for i, pm := range msgs {
		if ctx.Err() != nil {
			out[i] = Delivery{MessageID: pm.ID, Outcome: OutcomeRetry, Err: ctx.Err()}
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			e.Process(ctx, delivered(pm, &out[i]))
		})
	}
	wg.Wait()
	return out, nil
}

// delivered is the engine's message for pm, recording its settlement in
// d.
func delivered(pm *pubsub.Message, d *Delivery) *message {
	m := &message{
		ID: pm.ID, Data: pm.Data, Attributes: pm.Attributes, OrderingKey: pm.OrderingKey,
		PublishTime: pm.PublishTime, Acker: nopAcker{},
		observe: func(s Delivery) { *d = s },
	}
	if m.PublishTime.IsZero() {
		m.PublishTime = time.Now()
	}
	if pm.DeliveryAttempt != nil {
		m.DeliveryAttempt = *pm.DeliveryAttempt
	}
	return m
}

// nopAcker settles a delivered message: Deliver reports instead.
type nopAcker struct{}

func (nopAcker) Ack(context.Context) error { return nil }
func (nopAcker) Nack()                     {}
func (nopAcker) Confirms() bool            { return false }

// Stats are a projection's counters since New: the values of its
// projector_* series on Options.Registerer, readable without scraping.
type Stats struct {
	// Applied counts events applied (projector_applied_total).
	Applied int64
	// Duplicate counts deliveries absorbed by the inbox
	// (projector_duplicate_total).
	Duplicate int64
	// Stale counts events skipped as older than the read model
	// (projector_stale_skipped_total).
	Stale int64
	// Failed counts failed deliveries, transient and permanent, of every
	// reason (projector_failed_total).
	Failed int64
	// DeadLettered counts messages published to the dead-letter topic
	// (projector_dead_lettered_total).
	DeadLettered int64
	// InboxDeleted counts inbox rows deleted by retention
	// (projector_inbox_deleted_total).
	InboxDeleted int64
}

// Stats returns the counters of the registered projection named
// projection.
func (p *Projector) Stats(projection string) (Stats, error) {
	p.mu.Lock()
	e := p.engines[projection]
	p.mu.Unlock()
	if e == nil {
		return Stats{}, fmt.Errorf("projector: Stats: no projection %q registered", projection)
	}
	m := p.metrics
	return Stats{
		Applied:      count(m.applied, projection),
		Duplicate:    count(m.duplicate, projection),
		Stale:        count(m.stale, projection),
		Failed:       count(m.failed, projection),
		DeadLettered: count(m.deadLettered, projection),
		InboxDeleted: count(m.inboxDeleted, projection),
	}, nil
}
