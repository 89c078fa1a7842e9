package projection

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/projection"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordersdb"
)

// Consumer is the inbox consumer name of the order_summaries read model.
const Consumer = "order-summaries"

// Summaries is the order_summaries read model.
type Summaries struct{}

var _ projection.TxHandler = Summaries{}

// HandleTx upserts the order's state at the event's version, in tx. The
// upsert changes nothing when the read model holds that version or a newer
// one: Stale.
func (Summaries) HandleTx(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	e, ok := ev.Payload.(*ordersv1.OrderEvent)
	if !ok {
		return 0, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("payload is %T, want *ordersv1.OrderEvent", ev.Payload))
	}
	p, err := events.SummaryFromOrder(events.OrderOf(e))
	if err != nil {
		return 0, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s: %w", ev, err))
	}
	p.LastEventID = ev.ID
	n, err := ordersdb.New(tx).UpsertOrderSummary(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("upserting order_summaries %s v%d: %w", ev.AggregateID, ev.Version, err)
	}
	if n == 0 {
		return projection.Stale, nil
	}
	return projection.Applied, nil
}
