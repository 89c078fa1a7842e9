package projection

import (
	"fmt"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	proj "github.com/eventrelay/eventrelay/projection"
)

// SchemaVersions are the payload schema versions these read models read.
var SchemaVersions = []int32{events.SchemaVersion}

// Decode reads a catalog envelope. The payload handed to handlers is the
// *catalogv1.Event; a body that is not a valid envelope is payload_invalid.
func Decode(body []byte) (proj.Envelope, error) {
	ev, err := events.Decode(body)
	if err != nil {
		return proj.Envelope{}, proj.Permanent(proj.PayloadInvalid, err)
	}
	env := proj.Envelope{
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

// EventTypes are the catalog's video event types.
func EventTypes() []proj.EventType {
	var out []proj.EventType
	for _, t := range []string{events.TypeVideoCreated, events.TypeVideoUpdated, events.TypeVideoDeleted} {
		out = append(out, proj.EventType{Name: t, SchemaVersions: SchemaVersions, Decode: Decode})
	}
	return out
}

// Register routes every catalog video event type to h.
func Register[H any](reg *proj.Registry[H], h H) error {
	for _, et := range EventTypes() {
		if err := reg.Register(et, h); err != nil {
			return err
		}
	}
	return nil
}

// videoOf returns the state an event carries; Decode guarantees it.
func videoOf(ev *proj.Event) (*catalogv1.Event, *catalogv1.Video, error) {
	e, ok := ev.Payload.(*catalogv1.Event)
	if !ok {
		return nil, nil, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("payload is %T, want *catalogv1.Event", ev.Payload))
	}
	v := events.VideoOf(e)
	if v == nil {
		return nil, nil, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("event %s carries no video", ev.ID))
	}
	return e, v, nil
}
