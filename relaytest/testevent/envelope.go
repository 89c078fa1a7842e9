package testevent

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

// The test domain's names.
const (
	Topic         = "test-items"
	AggregateType = "item"
	TypeCreated   = "test.item.created"
	TypeUpdated   = "test.item.updated"
	TypeDeleted   = "test.item.deleted"
)

// Encode is an outbox.Encoder: the identity fields and the payload (as an
// Any, base64) in a Struct.
func Encode(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
	a, err := anypb.New(payload)
	if err != nil {
		return nil, fmt.Errorf("testevent: wrapping payload: %w", err)
	}
	env := &structpb.Struct{Fields: map[string]*structpb.Value{
		"event_id":       structpb.NewStringValue(meta.EventID.String()),
		"type":           structpb.NewStringValue(meta.EventType),
		"aggregate_type": structpb.NewStringValue(meta.AggregateType),
		"aggregate_id":   structpb.NewStringValue(meta.AggregateID),
		"version":        structpb.NewStringValue(fmt.Sprint(meta.AggregateVersion)),
		"schema_version": structpb.NewNumberValue(float64(meta.SchemaVersion)),
		"occurred_at":    structpb.NewStringValue(meta.OccurredAt.UTC().Format(time.RFC3339Nano)),
		"payload_type":   structpb.NewStringValue(a.TypeUrl),
		"payload":        structpb.NewStringValue(base64.StdEncoding.EncodeToString(a.Value)),
	}}
	return proto.Marshal(env)
}

// Decode is a projection.Decoder for what Encode wrote; Payload is the
// decoded payload message (a *structpb.Struct for the events of this
// package).
func Decode(body []byte) (projection.Envelope, error) {
	var env structpb.Struct
	if err := proto.Unmarshal(body, &env); err != nil {
		return projection.Envelope{}, fmt.Errorf("testevent: envelope: %w", err)
	}
	f := env.GetFields()
	str := func(k string) string { return f[k].GetStringValue() }
	var out projection.Envelope
	out.EventID, out.Type, out.AggregateType, out.AggregateID = str("event_id"), str("type"), str("aggregate_type"), str("aggregate_id")
	if _, err := fmt.Sscan(str("version"), &out.AggregateVersion); err != nil {
		return projection.Envelope{}, fmt.Errorf("testevent: version %q: %w", str("version"), err)
	}
	out.SchemaVersion = int32(f["schema_version"].GetNumberValue())
	at, err := time.Parse(time.RFC3339Nano, str("occurred_at"))
	if err != nil {
		return projection.Envelope{}, fmt.Errorf("testevent: occurred_at: %w", err)
	}
	out.OccurredAt = at
	raw, err := base64.StdEncoding.DecodeString(str("payload"))
	if err != nil {
		return projection.Envelope{}, fmt.Errorf("testevent: payload: %w", err)
	}
	msg, err := anypb.UnmarshalNew(&anypb.Any{TypeUrl: str("payload_type"), Value: raw}, proto.UnmarshalOptions{})
	if err != nil {
		return projection.Envelope{}, fmt.Errorf("testevent: payload: %w", err)
	}
	out.Payload = msg
	return out, nil
}

// Item is version v of item id: TypeCreated at version 1, TypeUpdated
// after; the payload carries the id, the version, a name and padding bytes
// (to make large payloads).
func Item(id string, v int64, padding int) outbox.Event {
	typ := TypeUpdated
	if v == 1 {
		typ = TypeCreated
	}
	return outbox.Event{AggregateType: AggregateType, AggregateID: id, AggregateVersion: v, EventType: typ,
		Payload: Payload(id, v, fmt.Sprintf("item %s v%d", id, v), strings.Repeat("x", padding))}
}

// Deleted is the deletion of item id at version v.
func Deleted(id string, v int64) outbox.Event {
	return outbox.Event{AggregateType: AggregateType, AggregateID: id, AggregateVersion: v, EventType: TypeDeleted,
		Payload: Payload(id, v, "", "")}
}

// Payload is an item's state as a Struct.
func Payload(id string, v int64, name, padding string) *structpb.Struct {
	return &structpb.Struct{Fields: map[string]*structpb.Value{
		"id":      structpb.NewStringValue(id),
		"version": structpb.NewStringValue(fmt.Sprint(v)),
		"name":    structpb.NewStringValue(name),
		"padding": structpb.NewStringValue(padding),
	}}
}

// ID is the deterministic id of item i (a UUID, as services commonly use).
func ID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
