package hook

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// QueryCheck is the Verifier of a read model that is not one row per
// aggregate (per-customer totals, counters): the service's own check,
// such as sums recomputed from the source of truth. Query runs in
// verify's snapshot and returns one row per key where the read model
// differs from what the source implies, as three text columns: the key,
// the expected value and the read model's. No row: the read model
// matches. Combine it with a TableVerifier with Verifiers.
//
//	hook.QueryCheck{Store: "postgres customer_totals", Query: `
//		SELECT s.customer_id, s.total::text, coalesce(t.total, 0)::text
//		FROM (SELECT customer_id, sum(amount_cents) AS total FROM orders GROUP BY 1) s
//		LEFT JOIN customer_totals t USING (customer_id)
//		WHERE t.total IS DISTINCT FROM s.total`}
type QueryCheck struct {
	// Store names the read model in the report ("postgres customer_totals").
	Store string
	// Query returns the differing keys (key, expected, actual).
	Query string
	// Kind is the drift's kind (default "diverged").
	Kind string
}

// Verify implements Verifier. The report's Note names the first
// difference: "customer c-1: source 300, read model 250".
func (q QueryCheck) Verify(ctx context.Context, tx pgx.Tx, _ Env, samples int) (Report, error) {
	kind := q.Kind
	if kind == "" {
		kind = "diverged"
	}
	rows, err := tx.Query(ctx, q.Query)
	if err != nil {
		return Report{}, fmt.Errorf("checking %s: %w", q.Store, err)
	}
	defer rows.Close()
	t := NewTally(samples)
	store := Store{Name: q.Store, Checked: true}
	for rows.Next() {
		var key, want, got string
		if err := rows.Scan(&key, &want, &got); err != nil {
			return Report{}, fmt.Errorf("checking %s: a row is not (key, expected, actual) as text: %w", q.Store, err)
		}
		if store.Note == "" {
			store.Note = fmt.Sprintf("%s: source %s, read model %s", key, want, got)
		}
		t.Add(kind, key, 0, 0)
	}
	if err := rows.Err(); err != nil {
		return Report{}, fmt.Errorf("checking %s: %w", q.Store, err)
	}
	store.Drift = t.Drift()
	return Report{Stores: []Store{store}}, nil
}

// Verifiers is one Verifier running each of vs in the same snapshot: the
// report's noun and source counts are the first's that names a noun, its
// stores every one's.
type Verifiers []Verifier

// Verify implements Verifier.
func (vs Verifiers) Verify(ctx context.Context, tx pgx.Tx, env Env, samples int) (Report, error) {
	var out Report
	for _, v := range vs {
		r, err := v.Verify(ctx, tx, env, samples)
		if err != nil {
			return Report{}, err
		}
		if out.Noun == "" {
			out.Noun, out.Rows, out.Deleted = r.Noun, r.Rows, r.Deleted
		}
		out.Stores = append(out.Stores, r.Stores...)
	}
	return out, nil
}
