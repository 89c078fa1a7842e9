package projector

import (
	"context"

	"github.com/eventrelay/eventrelay/consistency"
)

// announce tells the consistency waiters that consumer's read model holds
// the aggregates of items at their versions or newer: every item without
// an error (applied, stale or duplicate). One NOTIFY per batch; in the
// apply transaction it is delivered only when that commits.
func announce(ctx context.Context, db consistency.Execer, consumer string, items []*item) error {
	held := make([]consistency.Token, 0, len(items))
	for _, it := range items {
		if it.err == nil && it.result != resultNone {
			held = append(held, consistency.Token{AggregateType: it.ev.AggregateType, AggregateID: it.ev.AggregateID, AggregateVersion: it.ev.AggregateVersion})
		}
	}
	return consistency.Announce(ctx, db, "", consumer, held)
}
