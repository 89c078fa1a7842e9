package projector

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/projection"
)

// result is the engine's view of one message's fate.
type result int

const (
	resultNone result = iota
	resultApplied
	resultStale
	resultDuplicate
)

func resultOf(o projection.Outcome) result {
	if o == projection.Stale {
		return resultStale
	}
	return resultApplied
}

func (r result) String() string {
	switch r {
	case resultApplied:
		return "applied"
	case resultStale:
		return "stale"
	case resultDuplicate:
		return "duplicate"
	}
	return "none"
}

// item is a message on its way through a batch. The worker that owns the
// batch sets result or err, then closes the batch's done.
type item struct {
	msg *message
	// ctx is the delivery's context (not canceled by shutdown), with the
	// process span once begun; received is when the delivery arrived.
	ctx      context.Context
	received time.Time
	// delivery is ctx before the process span: an item held by a blocked
	// projection (holdBlocked) starts a new span from it.
	delivery context.Context
	ev       projection.Event
	// handlerID is the HandlerID of the event's route: the index of its
	// handler in the applier's handler table.
	handlerID int
	result    result
	err       error
	// backoff is how long to hold a transiently failed message before the
	// nack (set by the worker from the engine's failure streak).
	backoff int64
	// span is the message's process span; applySpan the apply span under
	// it while the worker's applier runs (nil when span does not record).
	span      trace.Span
	applySpan trace.Span
}

// parse sets the event's identity from the message's attributes.
func (it *item) parse() error {
	var err error
	it.ev, err = projection.ParseAttributes(it.msg.Attributes)
	it.ev.MessageID, it.ev.DeliveryAttempt, it.ev.Body = it.msg.ID, it.msg.DeliveryAttempt, it.msg.Data
	if it.ev.Attributes == nil {
		it.ev.Attributes = it.msg.Attributes
	}
	return err
}

// settlesOnWorker reports, once the worker is done with the item,
// whether the worker settles it (see engine.settleSucceeded): it
// succeeded and its ack does not wait for a confirmation.
func (it *item) settlesOnWorker() bool { return it.err == nil && !it.msg.Acker.Confirms() }

// fail sets err on every item that has no error yet and clears results
// that were pending the commit.
func failAll(items []*item, err error) {
	for _, it := range items {
		if it.err == nil {
			it.err = err
			it.result = resultNone
		}
	}
}
