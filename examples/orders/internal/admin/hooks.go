package admin

import (
	"github.com/eventrelay/eventrelay/relayctl/hook"

	"github.com/eventrelay/eventrelay/examples/orders/migrations"
)

// Hooks are the orders service's relayctl hooks (`orders relayctl`; the
// search read model adds its own): its rebuild, its verify and its
// migration sets.
var Hooks = hook.Hooks{Rebuilder: Rebuilder{}, Verifier: hook.Verifiers{Verifier, PaidTotals}, Migrations: migrations.Sets}

// PaidTotals compares each customer's paid total, as GetCustomerSummary
// sums it from order_summaries, with the orders table's.
var PaidTotals = hook.QueryCheck{Store: "postgres order_summaries (paid totals per customer)", Query: `
	SELECT coalesce(o.customer_id, s.customer_id), coalesce(o.paid, 0)::text, coalesce(s.paid, 0)::text
	FROM (SELECT customer_id, sum(amount_cents) AS paid FROM orders WHERE status = 'paid' GROUP BY 1) o
	FULL JOIN (SELECT customer_id, sum(amount_cents) AS paid FROM order_summaries WHERE status = 'paid' GROUP BY 1) s
	USING (customer_id)
	WHERE o.paid IS DISTINCT FROM s.paid`}

// Verifier compares the orders table with the order_summaries read model.
var Verifier = hook.TableVerifier{
	Noun:      "order",
	Source:    hook.Table{Name: "orders", Key: "id", Version: "version"},
	ReadModel: hook.Table{Name: "order_summaries", Key: "order_id", Version: "version"},
	Columns: map[string]string{"customer_id": "customer_id", "amount_cents": "amount_cents", "currency": "currency",
		"status": "status", "placed_at": "placed_at", "updated_at": "source_updated_at"},
}
