package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/backoff"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// holds are what the relay holds because the environment failed: topics
// publishing is held on (Relay.blocks: Pub/Sub out, over a quota, a
// missing topic, a refused permission; see holdsTopic) and statements
// Postgres refuses for a missing privilege (Relay.stored). A held topic's
// claimed rows are rescheduled to the end of the hold without reaching
// Pub/Sub and without spending an attempt; the rows claimed after it
// probe: a success clears the hold, a failure extends it with backoff.
// Rows never fail for such a cause.
type holds struct {
	kind   string // what is held: "topic", "statement"
	policy backoff.Policy
	gauge  *prometheus.GaugeVec // labels: the key (topic, statement), reason

	mu sync.Mutex
	by map[string]*hold
}

type hold struct {
	reason   errclass.Reason
	err      string
	since    time.Time
	until    time.Time
	failures int32
}

// maxHold caps a hold (and so the wait after Pub/Sub answers or the
// privilege is granted again), below Options.MaxBackoff when that is
// longer.
const maxHold = 30 * time.Second

// holdPolicy is the backoff of a hold: rows' backoff, capped at maxHold.
func holdPolicy(rows backoff.Policy) backoff.Policy {
	rows.Max = min(rows.Max, maxHold)
	return rows
}

// holdsTopic reports whether a publish that failed for reason holds its
// topic instead of spending the row's attempts: the cause is Pub/Sub or
// its environment, never the event. Pub/Sub unavailable or too slow
// (unavailable, timeout), failing inside (server_error), over a quota
// (rate_limited), refusing for a resource's state (precondition_failed),
// or an environmental reason (topic_not_found, permission_denied).
// Attempts are spent only on what may be the event's own fault (unknown,
// request_invalid) and deterministic reasons fail the row at once.
func holdsTopic(reason errclass.Reason) bool {
	switch reason {
	case errclass.Unavailable, errclass.Timeout, errclass.ServerError, errclass.RateLimited, errclass.PreconditionFailed:
		return true
	}
	return reason.Environmental()
}

func newHolds(kind string, policy backoff.Policy, gauge *prometheus.GaugeVec) *holds {
	return &holds{kind: kind, policy: policy, gauge: gauge, by: map[string]*hold{}}
}

// failed records a failure that holds key and returns how long key stays
// held, and whether this failure started the hold (key was not held
// before).
func (b *holds) failed(key string, reason errclass.Reason, err string) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	k := b.by[key]
	started := k == nil
	if started {
		k = &hold{since: now}
		b.by[key] = k
	}
	if k.reason != reason {
		if k.reason != "" {
			b.gauge.DeleteLabelValues(key, string(k.reason))
		}
		b.gauge.WithLabelValues(key, string(reason)).Set(1)
	}
	k.reason, k.err = reason, err
	if now.Before(k.until) {
		// Another row of the same round: the hold already covers it.
		return k.until.Sub(now), false
	}
	delay := b.policy.Delay(k.failures)
	k.failures++
	k.until = now.Add(delay)
	return delay, started
}

// cleared clears key's hold (a publish to the topic, the statement
// succeeded). It returns the hold it cleared (nil: key was not held).
func (b *holds) cleared(key string) *hold {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.by[key]
	if k != nil {
		b.gauge.DeleteLabelValues(key, string(k.reason))
		delete(b.by, key)
	}
	return k
}

// clear ends every hold: a log-mode standby publishes nothing, so holds
// nothing; the reader that takes over finds the holds again.
func (b *holds) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for key, k := range b.by {
		b.gauge.DeleteLabelValues(key, string(k.reason))
		delete(b.by, key)
	}
}

// blocked reports whether key is held now, for how much longer and why.
func (b *holds) blocked(key string) (time.Duration, errclass.Reason, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.by[key]
	if k == nil {
		return 0, "", false
	}
	left := time.Until(k.until)
	if left <= 0 {
		return 0, "", false // the next row probes
	}
	return left, k.reason, true
}

// Check is a readiness check ("publish_blocked", "store_blocked"): it
// fails while anything is held, naming each, its reason, since when and
// the error. A hold stays until its key succeeds again.
func (b *holds) Check(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.by) == 0 {
		return nil
	}
	var parts []string
	for key, k := range b.by {
		parts = append(parts, fmt.Sprintf("%s %s: %s for %s (%s)", b.kind, key, k.reason, time.Since(k.since).Round(time.Second), k.err))
	}
	sort.Strings(parts)
	return fmt.Errorf("held: %s", strings.Join(parts, "; "))
}

// hold holds e's topic after a publish failed for reason (holdsTopic) and
// returns when e is due again: the end of the hold. Only a publish that
// reached Pub/Sub (attempted) extends the hold; a row refused because its
// topic is held waits for the hold's end. The start of a hold is logged,
// not every row it covers.
func (r *Relay) hold(e *claim.Event, reason errclass.Reason, msg string, attempted bool) time.Duration {
	topic := r.pub.Topic(e)
	delay, _, _ := r.blocks.blocked(topic)
	if attempted {
		var started bool
		if delay, started = r.blocks.failed(topic, reason, msg); started {
			r.log.Warn("publishing to the topic is held: the cause is Pub/Sub or its environment, not the event; its rows wait pending without spending attempts",
				eventAttrs(e, slog.String("error_reason", string(reason)), slog.String("error", msg),
					slog.Int64("retry_in_ms", delay.Milliseconds()))...)
		}
	}
	return max(delay, r.opts.BaseBackoff)
}

// published clears e's topic's hold after e was published.
func (r *Relay) published(e *claim.Event) {
	topic := r.pub.Topic(e)
	if k := r.blocks.cleared(topic); k != nil {
		r.log.Info("publishing to the topic resumed", slog.String("topic", topic),
			slog.String("held_for", time.Since(k.since).Round(time.Millisecond).String()),
			slog.String("error_reason", string(k.reason)))
	}
}
