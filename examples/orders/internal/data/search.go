package data

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/elastic"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

// searchLimit is the most orders a search answers.
const searchLimit = 100

type orderSearch struct {
	es    *elastic.Client
	alias string
}

// NewOrderSearch returns the biz.OrderSearch over the open search read
// model s (nil without one: no search).
func NewOrderSearch(s *elastic.Search) biz.OrderSearch {
	if s == nil {
		return nil
	}
	return &orderSearch{es: s.Client, alias: s.Alias}
}

// searchDoc is the part of a search document an answer needs.
type searchDoc struct {
	OrderID     string    `json:"order_id"`
	CustomerID  string    `json:"customer_id"`
	Status      string    `json:"status"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	Version     int64     `json:"version"`
	PlacedAt    time.Time `json:"placed_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func (s *orderSearch) Search(ctx context.Context, customerID string, status ordersv1.OrderStatus, fresh bool) ([]*ordersv1.Order, error) {
	if fresh { // the awaited writes are in the index (a real-time GET saw them), not yet in a search
		if err := s.es.Refresh(ctx, s.alias); err != nil {
			return nil, fmt.Errorf("refreshing the search index: %w", err)
		}
	}
	filter := []any{map[string]any{"term": map[string]any{"customer_id": customerID}}, elastic.LiveFilter()}
	if status != ordersv1.OrderStatus_ORDER_STATUS_UNSPECIFIED {
		name, err := events.StatusName(status)
		if err != nil {
			return nil, err
		}
		filter = append(filter, map[string]any{"term": map[string]any{"status": name}})
	}
	hits, err := s.es.Search(ctx, s.alias, map[string]any{"size": searchLimit,
		"query": map[string]any{"bool": map[string]any{"filter": filter}},
		"sort":  []any{map[string]any{"placed_at": "desc"}, map[string]any{"order_id": "asc"}}})
	if err != nil {
		return nil, fmt.Errorf("searching orders of %s: %w", customerID, err)
	}
	out := make([]*ordersv1.Order, 0, len(hits))
	for _, h := range hits {
		var d searchDoc
		if err := json.Unmarshal(h.Source, &d); err != nil {
			return nil, fmt.Errorf("search document %s: %w", h.ID, err)
		}
		st, err := events.StatusOf(d.Status)
		if err != nil {
			return nil, fmt.Errorf("search document %s: %w", h.ID, err)
		}
		out = append(out, &ordersv1.Order{Id: d.OrderID, CustomerId: d.CustomerID, AmountCents: d.AmountCents, Currency: d.Currency,
			Status: st, Version: d.Version, PlacedAt: timestamppb.New(d.PlacedAt), UpdatedAt: timestamppb.New(d.UpdatedAt)})
	}
	return out, nil
}
