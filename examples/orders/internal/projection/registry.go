package projection

import (
	"fmt"

	"github.com/eventrelay/eventrelay/projection"

	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
)

// Decode reads an OrderEvent envelope for the projector. The payload handed
// to handlers is the *ordersv1.OrderEvent; a body that is not a valid
// envelope is payload_invalid (dead-lettered).
func Decode(body []byte) (projection.Envelope, error) {
	ev, err := events.Decode(body)
	if err != nil {
		return projection.Envelope{}, projection.Permanent(projection.PayloadInvalid, err)
	}
	env := projection.Envelope{
		EventID:       ev.GetEventId(),
		Type:          ev.GetEventType(),
		AggregateType: ev.GetAggregateType(),
		AggregateID:   ev.GetAggregateId(),
		Version:       ev.GetAggregateVersion(),
		SchemaVersion: ev.GetSchemaVersion(),
		Payload:       ev,
	}
	if ev.GetOccurredAt() != nil {
		env.OccurredAt = ev.GetOccurredAt().AsTime()
	}
	return env, nil
}

// Registry routes every order event type (schema version 1) to the
// order_summaries read model.
func Registry() (*projection.Registry[projection.TxHandler], error) {
	reg := projection.NewRegistry[projection.TxHandler]()
	for _, t := range events.Types {
		et := projection.EventType{Name: t, SchemaVersions: []int32{events.SchemaVersion}, Decode: Decode}
		if err := reg.Register(et, Summaries{}); err != nil {
			return nil, fmt.Errorf("registering %s: %w", t, err)
		}
	}
	return reg, nil
}
