package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
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

// Search is the search read model of every order event in SearchIndex
// (with ELASTIC_URL; READ_PATH_SEARCH=false turns SearchOrders off while
// the index is kept); configs/pubsub.yaml holds its subscription and
// dead-letter topic. `orders relayctl rebuild --reindex` fills a new index
// from the orders table, verify compares the index with it.
var Search = elastic.ReadModel{
	Projection: projector.Projection{Name: "order-search", Subscription: "orders.order-search", DeadLetterTopic: "orders.order.events.dlq-search"},
	Index:      SearchIndex,
	Handlers:   elastic.Handlers(events.Codec, searchDocument),
	Admin:      elastic.Admin{Source: "orders", Documents: searchDocuments, Versions: orderVersions},
	ReadSwitch: "READ_PATH_SEARCH",
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

// searchDocuments emits the search document of every order at its version.
func searchDocuments(ctx context.Context, db projection.DBTX, emit func(elastic.Doc) error) error {
	q := ordersdb.New(db)
	var after uuid.UUID
	for {
		rows, err := q.ListOrdersForRestatement(ctx, ordersdb.ListOrdersForRestatementParams{AfterID: after, Ids: []uuid.UUID{}, PageSize: 500})
		if err != nil {
			return fmt.Errorf("reading orders after %s: %w", after, err)
		}
		for _, r := range rows {
			o, err := events.OrderFromRow(r)
			if err != nil {
				return err
			}
			src, err := SearchDocument(o)
			if err != nil {
				return fmt.Errorf("order %s: %w", r.ID, err)
			}
			if err := emit(elastic.Doc{ID: o.GetId(), Version: r.Version, Source: src}); err != nil {
				return err
			}
			after = r.ID
		}
		if len(rows) < 500 {
			return nil
		}
	}
}

// orderVersions emits the version of every order (orders are never
// deleted).
func orderVersions(ctx context.Context, tx pgx.Tx, emit func(string, int64, bool) error) error {
	rows, err := tx.Query(ctx, "SELECT id::text, version FROM orders")
	if err != nil {
		return fmt.Errorf("reading order versions: %w", err)
	}
	var id string
	var version int64
	_, err = pgx.ForEachRow(rows, []any{&id, &version}, func() error { return emit(id, version, false) })
	return err
}
