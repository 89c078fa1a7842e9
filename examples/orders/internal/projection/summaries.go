package projection

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

// Summaries is the order_summaries projection: every order event goes to
// summarize, and a batch's upserts to Postgres in one round trip.
// configs/pubsub.yaml holds its subscription and dead-letter topic.
var Summaries = projector.Projection{Name: "order-summaries", Subscription: "orders.order-summaries",
	DeadLetterTopic: "orders.order.events.dlq-summaries", Tables: []string{"order_summaries"},
	Tx: envelope.MustHandleAllExec(events.Codec, summarize)}

// stateful is an order event: each carries the order at the event's version.
type stateful interface {
	proto.Message
	GetOrder() *ordersv1.Order
}

// summarize upserts the order's state at the event's version. The upsert
// changes nothing when the read model holds that version or a newer one,
// and the event is Stale.
func summarize(ctx context.Context, db projection.DBTX, ev *projection.Event, p stateful) error {
	o := p.GetOrder()
	if o.GetId() != ev.AggregateID || o.GetVersion() != ev.AggregateVersion {
		return projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s carries order %s v%d", ev, o.GetId(), o.GetVersion()))
	}
	row, err := events.SummaryFromOrder(o)
	if err != nil {
		return projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s: %w", ev, err))
	}
	row.LastEventID = ev.ID
	if _, err := ordersdb.New(db).UpsertOrderSummary(ctx, row); err != nil {
		return fmt.Errorf("upserting order_summaries %s v%d: %w", ev.AggregateID, ev.AggregateVersion, err)
	}
	return nil
}
