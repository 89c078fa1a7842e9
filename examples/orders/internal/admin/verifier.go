package admin

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/relayctl/hook"

	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

// Verifier compares the orders table with the order_summaries read model
// (VerifyOrderSummaries: missing, extra, stale, ahead, diverged).
type Verifier struct{}

var _ hook.Verifier = Verifier{}

// Verify implements hook.Verifier.
func (Verifier) Verify(ctx context.Context, tx pgx.Tx, _ hook.Env, samples int) (hook.Report, error) {
	q := ordersdb.New(tx)
	n, err := q.CountOrders(ctx, nil)
	if err != nil {
		return hook.Report{}, fmt.Errorf("counting orders: %w", err)
	}
	rep := hook.Report{Noun: "order", Rows: n}
	store := hook.Store{Name: "postgres order_summaries", Checked: true}
	if store.Rows, err = q.CountOrderSummaries(ctx); err != nil {
		return rep, fmt.Errorf("counting order_summaries: %w", err)
	}
	// With samples 0 the query returns no rows: count kinds with 1 sample.
	rows, err := q.VerifyOrderSummaries(ctx, int64(max(samples, 1)))
	if err != nil {
		return rep, fmt.Errorf("comparing orders with order_summaries: %w", err)
	}
	tally := hook.NewTally(samples)
	counted := map[string]bool{}
	for _, r := range rows {
		if !counted[r.Kind] {
			tally.AddCount(r.Kind, r.KindTotal)
			counted[r.Kind] = true
		}
		tally.Sample(r.Kind, hook.Sample{ID: r.ID.String(), SourceVersion: r.SourceVersion, StoreVersion: r.SummaryVersion})
	}
	store.Drift = tally.Drift()
	rep.Stores = append(rep.Stores, store)
	return rep, nil
}
