package envelope

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"
)

// Event is the outbox event of payload, one of c's payloads declared in an
// Aggregate, for the aggregate aggregateID at version, occurred at at: its
// event type is payload's (TypeOf), its schema version the highest
// declared for that type (the one this code writes), its aggregate type
// and topic those of the Aggregate that declares it. Pass it to
// outbox.Writer.InsertTx in the transaction that left the aggregate at
// version:
//
//	ev, err := codec.Event(o.Id, o.Version, &ordersv1.OrderPaid{Order: o}, updatedAt)
//
// The event's Topic routes it whatever the writer's Topics and
// DefaultTopic say; set it to another topic, or to "" for the writer's
// routing, before InsertTx to send it elsewhere.
func (c *Codec) Event(aggregateID string, version int64, payload proto.Message, at time.Time) (outbox.Event, error) {
	name, err := c.TypeOf(payload)
	if err != nil {
		return outbox.Event{}, err
	}
	d := c.byName[name]
	if d.aggregate == "" {
		return outbox.Event{}, fmt.Errorf("envelope: event type %s is declared outside an Aggregate: its aggregate type and topic are unknown (declare it in envelope.Aggregate)", name)
	}
	return outbox.Event{
		AggregateType:    d.aggregate,
		AggregateID:      aggregateID,
		AggregateVersion: version,
		EventType:        name,
		SchemaVersion:    slices.Max(d.versions),
		Payload:          payload,
		OccurredAt:       at,
		Topic:            d.topic,
	}, nil
}
