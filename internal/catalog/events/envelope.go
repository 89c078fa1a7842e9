package events

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/outbox"
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

// ErrMalformed is wrapped by Decode for bodies that are not a valid envelope.
var ErrMalformed = errors.New("malformed catalog event")

// TypeOf returns the event type of a payload message.
func TypeOf(payload proto.Message) (string, error) {
	switch payload.(type) {
	case *catalogv1.VideoCreated:
		return TypeVideoCreated, nil
	case *catalogv1.VideoUpdated:
		return TypeVideoUpdated, nil
	case *catalogv1.VideoDeleted:
		return TypeVideoDeleted, nil
	default:
		return "", fmt.Errorf("%T is not a catalog event payload", payload)
	}
}

// Encode builds the catalogv1.Event envelope for an outbox row. It is the
// outbox.Encoder of the catalog service.
func Encode(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
	want, err := TypeOf(payload)
	if err != nil {
		return nil, err
	}
	if meta.EventType != want {
		return nil, fmt.Errorf("event type %q does not match payload %T (%s)", meta.EventType, payload, want)
	}
	ev := &catalogv1.Event{
		EventId:          meta.EventID.String(),
		EventType:        meta.EventType,
		AggregateType:    meta.AggregateType,
		AggregateId:      meta.AggregateID,
		AggregateVersion: meta.AggregateVersion,
		SchemaVersion:    meta.SchemaVersion,
		OccurredAt:       timestamppb.New(meta.OccurredAt),
		Producer: &catalogv1.Producer{
			Service:  meta.Producer.Service,
			Instance: meta.Producer.Instance,
			Version:  meta.Producer.Version,
		},
		Trace: &catalogv1.TraceContext{
			Traceparent: meta.Headers["traceparent"],
			Tracestate:  meta.Headers["tracestate"],
		},
	}
	switch p := payload.(type) {
	case *catalogv1.VideoCreated:
		ev.Payload = &catalogv1.Event_VideoCreated{VideoCreated: p}
	case *catalogv1.VideoUpdated:
		ev.Payload = &catalogv1.Event_VideoUpdated{VideoUpdated: p}
	case *catalogv1.VideoDeleted:
		ev.Payload = &catalogv1.Event_VideoDeleted{VideoDeleted: p}
	}
	return proto.Marshal(ev)
}

// Decode parses and checks an envelope: it must unmarshal, carry an id, an
// aggregate, a positive version, and a payload whose case matches
// event_type and whose video is the aggregate. Errors wrap ErrMalformed.
func Decode(body []byte) (*catalogv1.Event, error) {
	ev := &catalogv1.Event{}
	if err := proto.Unmarshal(body, ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if ev.GetEventId() == "" || ev.GetAggregateId() == "" || ev.GetAggregateVersion() < 1 {
		return nil, fmt.Errorf("%w: missing event_id, aggregate_id or aggregate_version", ErrMalformed)
	}
	var video *catalogv1.Video
	var want string
	switch p := ev.GetPayload().(type) {
	case *catalogv1.Event_VideoCreated:
		video, want = p.VideoCreated.GetVideo(), TypeVideoCreated
	case *catalogv1.Event_VideoUpdated:
		video, want = p.VideoUpdated.GetVideo(), TypeVideoUpdated
	case *catalogv1.Event_VideoDeleted:
		video, want = p.VideoDeleted.GetVideo(), TypeVideoDeleted
	default:
		return nil, fmt.Errorf("%w: no payload", ErrMalformed)
	}
	if ev.GetEventType() != want {
		return nil, fmt.Errorf("%w: event_type %q does not match payload (%s)", ErrMalformed, ev.GetEventType(), want)
	}
	if video == nil || video.GetId() != ev.GetAggregateId() || video.GetVersion() != ev.GetAggregateVersion() {
		return nil, fmt.Errorf("%w: payload video does not match aggregate %s v%d", ErrMalformed, ev.GetAggregateId(), ev.GetAggregateVersion())
	}
	return ev, nil
}

// VideoOf returns the state carried by a decoded event.
func VideoOf(ev *catalogv1.Event) *catalogv1.Video {
	switch p := ev.GetPayload().(type) {
	case *catalogv1.Event_VideoCreated:
		return p.VideoCreated.GetVideo()
	case *catalogv1.Event_VideoUpdated:
		return p.VideoUpdated.GetVideo()
	case *catalogv1.Event_VideoDeleted:
		return p.VideoDeleted.GetVideo()
	}
	return nil
}
