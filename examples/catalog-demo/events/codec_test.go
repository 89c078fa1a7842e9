package events

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

func meta(eventType string, version int64) outbox.Metadata {
	return outbox.Metadata{
		EventID:          uuid.Must(uuid.NewV7()),
		EventType:        eventType,
		AggregateType:    AggregateType,
		AggregateID:      "0196f0a0-0000-7000-8000-000000000001",
		AggregateVersion: version,
		SchemaVersion:    SchemaVersion,
		OccurredAt:       time.Date(2026, 11, 21, 1, 2, 3, 4000, time.UTC),
		Producer:         outbox.Producer{Service: "catalog"},
		Headers:          map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
}

func video(version int64) *catalogv1.Video {
	return &catalogv1.Video{Id: "0196f0a0-0000-7000-8000-000000000001", Title: "t", Version: version}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	m := meta(TypeVideoUpdated, 2)
	body, err := Codec.Encode(m, &catalogv1.VideoUpdated{Video: video(2), ChangedFields: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := Codec.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := env.Payload.(*catalogv1.VideoUpdated)
	if !ok {
		t.Fatalf("payload is %T, want *catalogv1.VideoUpdated", env.Payload)
	}
	if env.EventID != m.EventID.String() || env.Type != TypeVideoUpdated || env.AggregateType != AggregateType ||
		env.AggregateID != m.AggregateID || env.AggregateVersion != 2 || env.SchemaVersion != SchemaVersion ||
		!env.OccurredAt.Equal(m.OccurredAt) || p.GetVideo().GetTitle() != "t" || p.GetChangedFields().GetPaths()[0] != "title" {
		t.Fatalf("round trip lost data: %+v", env)
	}
	if v, err := VideoOf(env.Payload); err != nil || v.GetVersion() != 2 {
		t.Fatalf("VideoOf = %v, %v", v, err)
	}
}

func TestEncodeRefusesMismatchedType(t *testing.T) {
	if _, err := Codec.Encode(meta(TypeVideoDeleted, 1), &catalogv1.VideoCreated{Video: video(1)}); err == nil {
		t.Fatal("want error for event type / payload mismatch")
	}
}

// catalogV1Event is a body in the envelope the catalog wrote before the
// codec: catalog.v1.Event.
func catalogV1Event(mut func(*catalogv1.Event)) []byte {
	e := &catalogv1.Event{
		EventId: uuid.NewString(), EventType: TypeVideoDeleted, AggregateType: AggregateType, AggregateId: video(1).Id,
		AggregateVersion: 1, SchemaVersion: 1, OccurredAt: timestamppb.New(time.Date(2026, 11, 21, 1, 2, 3, 0, time.UTC)),
		Trace:   &catalogv1.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		Payload: &catalogv1.Event_VideoDeleted{VideoDeleted: &catalogv1.VideoDeleted{Video: video(1), Reason: "r"}},
	}
	mut(e)
	b, err := proto.Marshal(e)
	if err != nil {
		panic(err)
	}
	return b
}

func TestDecodeReadsCatalogV1Event(t *testing.T) {
	env, err := Codec.Decode(catalogV1Event(func(*catalogv1.Event) {}))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := env.Payload.(*catalogv1.VideoDeleted); !ok || p.GetReason() != "r" || env.Type != TypeVideoDeleted || env.AggregateVersion != 1 ||
		env.SchemaVersion != 1 || env.OccurredAt.IsZero() {
		t.Fatalf("decoded %+v", env)
	}
	m, err := Codec.DecodeEnvelope(catalogV1Event(func(*catalogv1.Event) {}), nil)
	if _, ok := m.(*catalogv1.Event); err != nil || !ok {
		t.Fatalf("DecodeEnvelope = %T, %v; want the *catalogv1.Event", m, err)
	}
}

// TestDecodeRefuses: bodies that are neither envelope are payload_invalid,
// the error naming both formats; a wrong event type is event_type_unknown.
func TestDecodeRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		body   []byte
		reason projection.Reason
	}{
		"garbage":          {[]byte{0xff, 0xff, 0xff}, projection.PayloadInvalid},
		"text":             {[]byte("not a protobuf"), projection.PayloadInvalid},
		"empty":            {nil, projection.PayloadInvalid},
		"v1 no payload":    {catalogV1Event(func(e *catalogv1.Event) { e.Payload = nil }), projection.PayloadInvalid},
		"v1 type mismatch": {catalogV1Event(func(e *catalogv1.Event) { e.EventType = TypeVideoCreated }), projection.PayloadInvalid},
		"v1 no event id":   {catalogV1Event(func(e *catalogv1.Event) { e.EventId = "" }), projection.PayloadInvalid},
		"v1 no version":    {catalogV1Event(func(e *catalogv1.Event) { e.AggregateVersion = 0 }), projection.PayloadInvalid},
	} {
		_, err := Codec.Decode(tc.body)
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if r, permanent := projection.Classify(err); r != tc.reason || !permanent {
			t.Errorf("%s: reason %v (permanent %v), want %v: %v", name, r, permanent, tc.reason, err)
		}
		if !strings.Contains(err.Error(), "neither an eventrelay.envelope.v1.Envelope") || !strings.Contains(err.Error(), "catalog.v1.Event") {
			t.Errorf("%s: error does not name both formats: %v", name, err)
		}
	}
}
