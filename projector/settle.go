package projector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
)

// settleTimeout bounds dead-letter publishing and exactly-once acks.
const settleTimeout = 30 * time.Second

// settle acks, nacks or dead-letters a finished item and records its
// outcome in metrics and logs.
func (e *engine) settle(ctx context.Context, it *item) {
	annotate(it.span, &it.ev)
	if it.err == nil {
		settled(it.span, it.result.String(), "", nil, nil)
		it.msg.report(Outcome(it.result.String()), "", nil)
		e.succeed(ctx, it) // an exactly-once ack bounds itself (pubsubAcker)
		return
	}
	e.settleFailed(ctx, it)
}

// settleFailed nacks or dead-letters an item that failed. (Apart from
// settle: its logging's frame would grow each delivery's stack.)
func (e *engine) settleFailed(ctx context.Context, it *item) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	reason, permanent := e.opts.Classify(it.err)
	log := e.logger(it).With("reason", string(reason), "error", it.err.Error())
	if !permanent {
		settled(it.span, outcomeRetry, reason, it.err, nil)
		it.msg.report(OutcomeRetry, reason, it.err)
		e.pm.failed(string(reason))
		log.Warn("projection failed, will be redelivered", "backoff_ms", time.Duration(it.backoff).Milliseconds())
		e.hold(time.Duration(it.backoff))
		it.msg.Acker.Nack()
		return
	}
	if err := e.opts.DeadLetter.DeadLetter(ctx, it.msg, e.opts.Name, reason, it.err); err != nil {
		// Never ack what was not recorded: the message comes back, and the
		// subscription's own dead-letter policy is the backstop.
		settled(it.span, outcomeRetry, reason, it.err, err)
		it.msg.report(OutcomeRetry, reason, fmt.Errorf("%w (dead-lettering failed: %w)", it.err, err))
		e.pm.failed("dead_letter_publish")
		log.Error("dead-lettering failed, will be redelivered", "dead_letter_error", err.Error())
		e.hold(e.opts.Batch.RetryBackoffMin)
		it.msg.Acker.Nack()
		return
	}
	settled(it.span, outcomeDeadLettered, reason, it.err, nil)
	it.msg.report(OutcomeDeadLettered, reason, it.err)
	e.pm.failed(string(reason))
	e.pm.deadLettered(string(reason))
	log.Error("message dead-lettered")
	e.ack(ctx, it)
}

func (e *engine) succeed(ctx context.Context, it *item) {
	switch it.result {
	case resultApplied:
		e.pm.applied.Inc()
		if !it.ev.OccurredAt.IsZero() {
			e.pm.latency.Observe(time.Since(it.ev.OccurredAt).Seconds())
		}
	case resultStale:
		e.pm.stale.Inc()
	case resultDuplicate:
		e.pm.duplicate.Inc()
	}
	if e.log.Enabled(ctx, slog.LevelDebug) {
		e.logProjected(it)
	}
	e.ack(ctx, it)
}

func (e *engine) logProjected(it *item) {
	e.logger(it).Debug("projected", "outcome", it.result.String(), "latency_ms", time.Since(it.ev.OccurredAt).Milliseconds())
}

func (e *engine) ack(ctx context.Context, it *item) {
	e.progress.Store(time.Now().UnixNano())
	if err := it.msg.Acker.Ack(ctx); err != nil {
		e.ackRefused(it, err)
	}
}

// ackRefused: exactly-once, the ack was refused (e.g. the lease expired).
// The message will come back and the inbox absorbs it.
func (e *engine) ackRefused(it *item, err error) {
	e.pm.ackFailed.Inc()
	e.logger(it).Warn("ack refused, message will be redelivered", "error", err.Error())
}

// hold waits d, or less when shutdown begins.
func (e *engine) hold(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.stopping:
	}
}

func (e *engine) logger(it *item) *slog.Logger {
	id := it.ev.ID.String()
	if it.ev.ID == uuid.Nil {
		id = it.msg.Attributes[contract.AttrEventID]
	}
	return e.log.With(
		"event_id", id,
		"event_type", it.ev.Type,
		"aggregate_type", it.ev.AggregateType,
		"aggregate_id", it.ev.AggregateID,
		"version", it.ev.AggregateVersion,
		"attempts", it.msg.DeliveryAttempt,
		"message_id", it.msg.ID,
	)
}
