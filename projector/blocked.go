package projector

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/projection"
)

// block is why a projection is blocked: its stores refuse its identity.
type block struct {
	reason projection.Reason
	err    string
	since  time.Time
}

// blocker tracks whether a projection is blocked. A failure whose reason
// is environmental (permission_denied: a read model's or the inbox's
// grant missing, an Elasticsearch credential refused) is never the
// event's fault: the message is held and applied again, never nacked into
// the subscription's dead-letter policy, never dead-lettered, never acked
// unapplied, until the store accepts it (the privilege granted, no
// restart). Meanwhile projector_blocked is 1 and the readiness check
// "blocked/<projection>" fails naming the error.
type blocker struct {
	cur atomic.Pointer[block]
}

// environmental reports whether reason is the environment's fault.
func environmental(reason projection.Reason) bool {
	return errclass.Reason(reason).Environmental()
}

// blocked records an environmental failure.
func (e *engine) blocked(reason projection.Reason, err error) {
	b := &block{reason: reason, err: err.Error(), since: time.Now()}
	if prev := e.block.cur.Load(); prev != nil {
		b.since = prev.since
	} else {
		e.log.Error("projection blocked: its store refuses the projector's identity; messages are held (none dead-lettered) until the privilege is granted",
			"reason", string(reason), "error", b.err)
	}
	e.block.cur.Store(b)
	e.pm.blocked.Set(1)
}

// unblocked clears the block once an event applied.
func (e *engine) unblocked() {
	if b := e.block.cur.Swap(nil); b != nil {
		e.pm.blocked.Set(0)
		e.log.Info("projection applies again", "blocked_for", time.Since(b.since).Truncate(time.Millisecond).String())
	}
}

// blockedCheck is the readiness check "blocked/<projection>".
func (e *engine) blockedCheck(context.Context) error {
	if b := e.block.cur.Load(); b != nil {
		return fmt.Errorf("projection %s blocked since %s (%s), holding its messages: %s",
			e.Name(), b.since.UTC().Format(time.RFC3339), b.reason, b.err)
	}
	return nil
}

// holdBlocked holds an item whose apply failed for an environmental
// reason (the engine is blocked) for its backoff and reports true: the
// caller applies it again. It reports false for any other item, and once
// shutdown begins (the item is then settled as a transient failure: nacked,
// delivered again later).
func (e *engine) holdBlocked(it *item) bool {
	reason, _ := e.opts.Classify(it.err)
	if !environmental(reason) || e.isStopping() {
		return false
	}
	e.pm.failed(string(reason))
	settled(it.span, outcomeRetry, reason, it.err, nil)
	it.msg.report(OutcomeRetry, reason, it.err)
	it.span.End()
	e.hold(max(time.Duration(it.backoff), e.opts.Batch.RetryBackoffMin))
	it.err, it.result, it.ctx, it.span = nil, resultNone, it.delivery, nil
	return true
}

// isStopping reports whether shutdown began.
func (e *engine) isStopping() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// noteBlocks blocks the engine when an item of the applied batch failed
// for an environmental reason, and unblocks it when one applied.
func (e *engine) noteBlocks(b []*item) {
	for _, it := range b {
		if it.err == nil {
			e.unblocked()
			return
		}
	}
	for _, it := range b {
		if reason, _ := e.opts.Classify(it.err); environmental(reason) {
			e.blocked(reason, it.err)
			return
		}
	}
}
