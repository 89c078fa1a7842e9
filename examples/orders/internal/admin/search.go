package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/projection"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// Search is the search index's side of `orders relayctl`: rebuild
// --reindex fills a new index from the orders table and swaps the alias,
// verify compares the index with the orders table (with --elastic-url or
// ELASTIC_URL).
var Search = elastic.Admin{Index: orderproj.SearchIndex, Source: "orders", Documents: searchDocuments, Versions: orderVersions}

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
			src, err := orderproj.SearchDocument(o)
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
