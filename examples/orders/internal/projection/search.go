package projection

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

// SearchIndex is the orders search read model: the alias "orders" over an
// index with a strict mapping (a document that does not fit is
// dead-lettered as mapping_error, never indexed with a guessed type).
var SearchIndex = elastic.Index{Alias: "orders", Body: []byte(`{
  "mappings": {"dynamic": "strict", "properties": {
    "order_id": {"type": "keyword"}, "customer_id": {"type": "keyword"}, "status": {"type": "keyword"},
    "amount_cents": {"type": "long"}, "currency": {"type": "keyword"}, "version": {"type": "long"},
    "placed_at": {"type": "date"}, "updated_at": {"type": "date"},
    "deleted": {"type": "boolean"}, "deleted_at": {"type": "date"}}}}`)}

// Search is the search projection of every order event into SearchIndex;
// configs/pubsub.yaml holds its subscription and dead-letter topic. Its
// registry needs the cluster's client: RegisterSearch.
var Search = projector.Projection{Name: "order-search", Subscription: "orders.order-search",
	DeadLetterTopic: "orders.order.events.dlq-search"}

// RegisterSearch registers Search on p, writing through client.
func RegisterSearch(p *projector.Projector, client *elastic.Client) error {
	reg, err := elastic.HandleAll(events.Codec, client, SearchIndex, searchDocument)
	if err != nil {
		return err
	}
	pr := Search
	pr.Batch = reg
	return p.Register(pr)
}

// searchDocument is the document of the order an event carries.
func searchDocument(ev *projection.Event, p stateful) ([]byte, error) {
	o := p.GetOrder()
	if o.GetId() != ev.AggregateID || o.GetVersion() != ev.AggregateVersion {
		return nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s carries order %s v%d", ev, o.GetId(), o.GetVersion()))
	}
	doc, err := SearchDocument(o)
	if err != nil {
		return nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s: %w", ev, err))
	}
	return doc, nil
}

// SearchDocument is the search document of an order at its version (orders
// are never deleted: no tombstones). Reindexing writes the same.
func SearchDocument(o *ordersv1.Order) ([]byte, error) {
	row, err := events.SummaryFromOrder(o)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"order_id": row.OrderID.String(), "customer_id": row.CustomerID, "status": row.Status,
		"amount_cents": row.AmountCents, "currency": row.Currency, "version": row.Version,
		"placed_at":  row.PlacedAt.UTC().Format(time.RFC3339Nano),
		"updated_at": row.SourceUpdatedAt.UTC().Format(time.RFC3339Nano), elastic.FieldDeleted: false,
	})
}
