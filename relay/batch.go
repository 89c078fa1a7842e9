package relay

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/backoff"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
)

// keyGroup is the rows of one (topic, ordering key) in a batch, in id
// (= version) order.
type keyGroup struct {
	events  []*claim.Event // the claimed rows of the key
	sent    []sentEvent    // capacity len(events)
	refused *claim.Event   // refused by the publisher before sending (nothing after it was sent)
	refusal error
	held    []*claim.Event // after a refusal: never sent
}

type sentEvent struct {
	e   *claim.Event
	res publish.Result
}

type groupKey struct{ topic, orderingKey string }

// process publishes one claimed batch and records the outcomes.
func (r *Relay) process(b claim.Batch) {
	r.m.Inflight.Add(float64(len(b.Events)))
	defer r.m.Inflight.Sub(float64(len(b.Events)))
	r.stall.inflight.Add(int64(len(b.Events)))
	defer r.stall.inflight.Add(-int64(len(b.Events)))

	stopLease := r.keepLease(b)
	out := r.publish(r.work, b)
	stopLease()
	r.mark(b, out)
}

// publish sends every row of the batch and collects the outcomes. The
// rows are handed to the publisher key by key, each key's rows in order
// and back to back, so that the versions of a key waiting together share
// a Publish request (the client library bundles per ordering key) instead
// of reaching it one bundling delay apart. For a key whose publish fails,
// the failing row gets retry or failed, the rows after it are released
// untouched, and the key is resumed once all of its results are in.
func (r *Relay) publish(ctx context.Context, b claim.Batch) claim.Outcomes {
	order := groupByKey(b.Events)
	for i := range order {
		r.send(ctx, &order[i])
	}
	r.pub.Flush() // the whole batch is handed over: do not wait out the bundling delay

	out := claim.Outcomes{Published: make([]claim.Published, 0, len(b.Events))}
	for i := range order {
		r.collect(ctx, &order[i], &out)
	}
	return out
}

// groupByKey returns the keys of events in the order of their first row,
// each with its rows in batch order. The groups' rows and sends share two
// arrays of the batch's size: a few allocations per batch, not per key.
func groupByKey(events []claim.Event) []keyGroup {
	index := make(map[groupKey]int, len(events))
	of := make([]int, len(events)) // the group of each row
	var sizes []int
	for i := range events {
		k := groupKey{events[i].Topic, events[i].OrderingKey}
		g, ok := index[k]
		if !ok {
			g = len(sizes)
			index[k] = g
			sizes = append(sizes, 0)
		}
		of[i] = g
		sizes[g]++
	}
	order := make([]keyGroup, len(sizes))
	rows := make([]*claim.Event, len(events))
	sent := make([]sentEvent, len(events))
	at := 0
	for g, n := range sizes {
		order[g].events = rows[at : at : at+n]
		order[g].sent = sent[at : at : at+n]
		at += n
	}
	for i := range events {
		g := &order[of[i]]
		g.events = append(g.events, &events[i])
	}
	return order
}

// send hands one key's rows to the publisher in order, up to the first
// refused one (the rest are held).
func (r *Relay) send(ctx context.Context, g *keyGroup) {
	for i, e := range g.events {
		if _, reason, ok := r.blocks.blocked(r.pub.Topic(e)); ok {
			g.refused, g.refusal = e, errclass.Newf(reason, "publishing to topic %s is held (%s)", r.pub.Topic(e), reason)
		} else if err := r.subs.held(r.pub.Topic(e)); err != nil {
			g.refused, g.refusal = e, err
		} else if res, err := r.pub.Publish(ctx, e); err != nil {
			g.refused, g.refusal = e, err
		} else {
			g.sent = append(g.sent, sentEvent{e, res})
			continue
		}
		g.held = g.events[i+1:]
		return
	}
}

// collect waits for one key's results in order and appends its outcomes.
func (r *Relay) collect(ctx context.Context, g *keyGroup, out *claim.Outcomes) {
	var failed *claim.Event
	abandoned := false
	for _, s := range g.sent {
		if abandoned {
			out.Released = append(out.Released, s.e.ID)
			continue
		}
		id, err := s.res.Get(ctx)
		switch {
		case errors.Is(err, publish.ErrAbandoned):
			// Unknown outcome (grace period over): hand back; a duplicate
			// publish is possible, a lost event is not.
			abandoned = true
			out.Released = append(out.Released, s.e.ID)
		case failed != nil:
			// Behind a failed head: the client failed it too (key paused).
			out.Released = append(out.Released, s.e.ID)
		case err != nil:
			failed = s.e
			r.failure(s.e, err, true, out)
		default:
			r.published(s.e)
			out.Published = append(out.Published, claim.Published{ID: s.e.ID, MessageID: id})
		}
	}
	if failed != nil && !abandoned {
		r.pub.Resume(failed) // every later result of the key is in
	}
	if g.refused != nil {
		if failed != nil || abandoned {
			out.Released = append(out.Released, g.refused.ID)
		} else {
			r.failure(g.refused, g.refusal, false, out)
		}
	}
	for _, e := range g.held {
		out.Released = append(out.Released, e.ID)
	}
}

// failure classifies a publish error into a retry or a terminal failure.
func (r *Relay) failure(e *claim.Event, err error, attempted bool, out *claim.Outcomes) {
	reason := errclass.Of(err)
	if !reason.Valid() {
		reason = errclass.Unknown
	}
	msg := err.Error()
	attempts := e.Attempts
	if attempted {
		attempts++
	}
	r.m.Failed.WithLabelValues(string(reason)).Inc()
	if reason.Defect() {
		// Not the event's fault and not the service's: a request this
		// relay built was refused. Loud, and counted in
		// outbox_failed_total{reason="request_invalid"} (alerted on).
		r.log.Error("Pub/Sub refused a request the relay built: a defect in eventrelay or its client library, not in the event; the row is retried",
			eventAttrs(e, slog.String("error_reason", string(reason)), slog.String("error", msg))...)
	}
	switch {
	case holdsTopic(reason):
		// Not the event's fault: hold the topic, retry after the hold,
		// never fail the row and never spend its attempts.
		out.Rescheduled = append(out.Rescheduled, claim.Rescheduled{
			ID: e.ID, Delay: max(r.hold(e, reason, msg, attempted), r.subs.retryIn(reason)), Reason: reason, Err: msg, Held: true,
		})
		return
	case !reason.Transient():
		out.Failures = append(out.Failures, claim.Failure{ID: e.ID, Reason: reason, Cause: reason, Err: msg, Attempted: attempted})
	case int(attempts) >= r.opts.MaxAttempts:
		out.Failures = append(out.Failures, claim.Failure{ID: e.ID, Reason: errclass.MaxAttempts, Cause: reason, Err: msg, Attempted: attempted})
	default:
		delay := r.backoff.Delay(e.Attempts)
		out.Rescheduled = append(out.Rescheduled, claim.Rescheduled{ID: e.ID, Delay: delay, Reason: reason, Err: msg})
		r.log.Warn("publish failed, retry scheduled", eventAttrs(e, slog.Int("attempts", int(attempts)),
			slog.String("error_reason", string(reason)), slog.String("error", msg),
			slog.Int64("retry_in_ms", delay.Milliseconds()))...)
		return
	}
	f := out.Failures[len(out.Failures)-1]
	r.log.Error("publish failed terminally", eventAttrs(e, slog.Int("attempts", int(attempts)),
		slog.String("error_reason", string(f.Reason)), slog.String("cause", string(f.Cause)), slog.String("error", msg))...)
}

// mark records the outcomes (retrying transient database errors for up
// to a lease, and a missing privilege for as long as it is missing, the
// claim kept) and updates the metrics from what the fenced writes
// changed.
func (r *Relay) mark(b claim.Batch, out claim.Outcomes) {
	deadline := time.Now().Add(r.opts.Lease)
	var applied claim.Applied
	var err error
	for attempt := int32(0); ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		applied, err = r.claims.Mark(ctx, b.Token, out)
		cancel()
		if err == nil {
			r.accepted(stmtMark, stmtLease) // the mark's settle updates the lease row too
			break
		}
		if delay, ok := r.refused(stmtMark, err); ok {
			r.m.StoreErrors.WithLabelValues("complete").Inc()
			if !r.holdMark(b, delay) {
				break
			}
			deadline, attempt = time.Now().Add(r.opts.Lease), -1
			continue
		}
		if !errclass.IsTransient(err) || time.Now().After(deadline) {
			break
		}
		r.m.StoreErrors.WithLabelValues("complete").Inc()
		time.Sleep(min(backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}.Delay(attempt), time.Until(deadline)))
	}
	if err != nil {
		r.m.StoreErrors.WithLabelValues("complete").Inc()
		r.log.Error("recording batch outcomes failed: rows return to pending when the lease expires (duplicates possible)",
			"rows", len(b.Events), "lock_token", b.Token, "error", err)
		return
	}
	r.m.Processed.Add(float64(len(applied.Published)))
	if len(applied.Published) > 0 {
		r.stall.published(time.Now())
	}
	for _, p := range applied.Published {
		r.m.Latency.Observe(p.Latency.Seconds())
	}
	r.m.RetryScheduled.Add(float64(applied.Rescheduled))
	if applied.Failed == int64(len(out.Failures)) {
		for _, f := range out.Failures {
			r.m.TerminalFailed.WithLabelValues(string(f.Reason)).Inc()
		}
	}
	r.m.Released.Add(float64(applied.Released))
	changed := int64(len(applied.Published)) + applied.Rescheduled + applied.Failed + applied.Released
	if lost := int64(out.Len()) - changed; lost > 0 {
		r.m.Fenced.Add(float64(lost))
		r.log.Warn("claim lost before outcomes were recorded: another worker took the rows over",
			"rows", lost, "lock_token", b.Token)
	}
	if r.log.Enabled(context.Background(), slog.LevelDebug) {
		r.logPublished(b, out, applied)
	}
}

// logPublished logs every published row (debug level: one line per event).
func (r *Relay) logPublished(b claim.Batch, out claim.Outcomes, applied claim.Applied) {
	byID := make(map[int64]*claim.Event, len(b.Events))
	for i := range b.Events {
		byID[b.Events[i].ID] = &b.Events[i]
	}
	msgID := make(map[int64]string, len(out.Published))
	for _, p := range out.Published {
		msgID[p.ID] = p.MessageID
	}
	for _, p := range applied.Published {
		if e := byID[p.ID]; e != nil {
			r.log.Debug("published", eventAttrs(e, slog.Int("attempts", int(e.Attempts)+1),
				slog.String("message_id", msgID[p.ID]), slog.Int64("latency_ms", p.Latency.Milliseconds()))...)
		}
	}
}

// eventAttrs are the standard log fields of a row.
func eventAttrs(e *claim.Event, extra ...slog.Attr) []any {
	attrs := []any{
		slog.String("event_id", e.EventID.String()),
		slog.String("aggregate_type", e.AggregateType),
		slog.String("aggregate_id", e.AggregateID),
		slog.String("event_type", e.EventType),
		slog.Int64("version", e.AggregateVersion),
		slog.String("topic", e.Topic),
	}
	for _, a := range extra {
		attrs = append(attrs, a)
	}
	return attrs
}
