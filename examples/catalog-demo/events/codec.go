package events

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/envelope"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/projection"
)

// Names of the catalog's events.
const (
	AggregateType = "catalog.video"
	Topic         = "catalog.video.events"

	TypeVideoCreated = "catalog.video.created"
	TypeVideoUpdated = "catalog.video.updated"
	TypeVideoDeleted = "catalog.video.deleted"

	// SchemaVersion is the payload schema version this code writes and reads.
	SchemaVersion = 1
)

// Codec is the catalog's envelope codec: Codec.Encode is the outbox
// writer's Encoder, Codec.Event a write's outbox event, Codec.Decode the
// projections' decoder, the payloads the VideoCreated, VideoUpdated and
// VideoDeleted messages, events of the catalog.video aggregate on Topic.
// It also reads the catalog.v1.Event envelope the catalog wrote before it
// moved onto eventrelay.envelope.v1.Envelope
// (docs/decisions/0016-catalog-envelope-codec.md).
var Codec = envelope.Must(envelope.Aggregate(AggregateType, Topic,
	envelope.Type[*catalogv1.VideoCreated](TypeVideoCreated, SchemaVersion),
	envelope.Type[*catalogv1.VideoUpdated](TypeVideoUpdated, SchemaVersion),
	envelope.Type[*catalogv1.VideoDeleted](TypeVideoDeleted, SchemaVersion),
)).WithLegacy(envelope.Legacy(readEvent))

// readEvent returns the identity and the payload of a catalog.v1.Event;
// the payload case must match event_type.
func readEvent(ev *catalogv1.Event) (projection.Envelope, error) {
	var payload proto.Message
	var want string
	switch p := ev.GetPayload().(type) {
	case *catalogv1.Event_VideoCreated:
		payload, want = p.VideoCreated, TypeVideoCreated
	case *catalogv1.Event_VideoUpdated:
		payload, want = p.VideoUpdated, TypeVideoUpdated
	case *catalogv1.Event_VideoDeleted:
		payload, want = p.VideoDeleted, TypeVideoDeleted
	default:
		return projection.Envelope{}, errors.New("no payload")
	}
	if ev.GetEventType() != want {
		return projection.Envelope{}, fmt.Errorf("event_type %q does not match the payload (%s)", ev.GetEventType(), want)
	}
	out := projection.Envelope{
		EventID:          ev.GetEventId(),
		Type:             ev.GetEventType(),
		AggregateType:    ev.GetAggregateType(),
		AggregateID:      ev.GetAggregateId(),
		AggregateVersion: ev.GetAggregateVersion(),
		SchemaVersion:    ev.GetSchemaVersion(),
		Payload:          payload,
	}
	if ev.GetOccurredAt() != nil {
		out.OccurredAt = ev.GetOccurredAt().AsTime()
	}
	return out, nil
}

// VideoOf returns the state a decoded payload carries: every catalog event
// carries the video's full state at the aggregate version.
func VideoOf(payload any) (*catalogv1.Video, error) {
	p, ok := payload.(interface{ GetVideo() *catalogv1.Video })
	if !ok || p.GetVideo() == nil {
		return nil, fmt.Errorf("payload %T carries no video", payload)
	}
	return p.GetVideo(), nil
}
