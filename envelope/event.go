package envelope

import (
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"
)

// Event is the outbox event of payload, one of c's declared payloads, for
// the aggregate (aggregateType, aggregateID) at version, occurred at at:
// its event type is payload's (TypeOf), its schema version the highest
// declared for that type (the one this code writes). Pass it to
// outbox.Writer.InsertTx in the transaction that left the aggregate at
// version:
//
//	ev, err := codec.Event("orders.order", o.Id, o.Version, &ordersv1.OrderPaid{Order: o}, updatedAt)
func (c *Codec) Event(aggregateType, aggregateID string, version int64, payload proto.Message, at time.Time) (outbox.Event, error) {
	name, err := c.TypeOf(payload)
	if err != nil {
		return outbox.Event{}, err
	}
	return outbox.Event{
		AggregateType:    aggregateType,
		AggregateID:      aggregateID,
		AggregateVersion: version,
		EventType:        name,
		SchemaVersion:    slices.Max(c.byName[name].versions),
		Payload:          payload,
		OccurredAt:       at,
	}, nil
}
