package admin

import (
	"github.com/eventrelay/eventrelay/relayctl/hook"

	"github.com/eventrelay/eventrelay/examples/orders/migrations"
)

// Hooks are the orders service's relayctl hooks (`orders relayctl`): its
// rebuild, the search index's reindex, its verify (order_summaries, and
// the search index given an Elasticsearch URL) and its migration sets.
var Hooks = hook.Hooks{Rebuilder: Rebuilder{}, Reindexer: Search, Verifier: Search.Verifier(Verifier, "order"), Migrations: migrations.Sets}

// Verifier compares the orders table with the order_summaries read model.
var Verifier = hook.TableVerifier{
	Noun:      "order",
	Source:    hook.Table{Name: "orders", Key: "id", Version: "version"},
	ReadModel: hook.Table{Name: "order_summaries", Key: "order_id", Version: "version"},
	Columns: map[string]string{"customer_id": "customer_id", "amount_cents": "amount_cents", "currency": "currency",
		"status": "status", "placed_at": "placed_at", "updated_at": "source_updated_at"},
}
