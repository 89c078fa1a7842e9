package events

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/outbox"
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
	body, err := Encode(m, &catalogv1.VideoUpdated{Video: video(2), ChangedFields: &fieldmaskpb.FieldMask{Paths: []string{"title"}}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if ev.GetEventId() != m.EventID.String() || ev.GetAggregateVersion() != 2 || ev.GetSchemaVersion() != 1 ||
		!ev.GetOccurredAt().AsTime().Equal(m.OccurredAt) || ev.GetTrace().GetTraceparent() != m.Headers["traceparent"] ||
		VideoOf(ev).GetTitle() != "t" || ev.GetVideoUpdated().GetChangedFields().GetPaths()[0] != "title" {
		t.Fatalf("round trip lost data: %v", ev)
	}
}

func TestEncodeRefusesMismatchedType(t *testing.T) {
	if _, err := Encode(meta(TypeVideoDeleted, 1), &catalogv1.VideoCreated{Video: video(1)}); err == nil {
		t.Fatal("want error for event type / payload mismatch")
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := &catalogv1.Event{
		EventId: "e", EventType: TypeVideoCreated, AggregateId: video(1).Id, AggregateVersion: 1,
		Payload: &catalogv1.Event_VideoCreated{VideoCreated: &catalogv1.VideoCreated{Video: video(1)}},
	}
	mutate := func(f func(*catalogv1.Event)) []byte {
		e := proto.Clone(good).(*catalogv1.Event)
		f(e)
		b, _ := proto.Marshal(e)
		return b
	}
	cases := map[string][]byte{
		"garbage":           {0xff, 0xff, 0xff},
		"no payload":        mutate(func(e *catalogv1.Event) { e.Payload = nil }),
		"type mismatch":     mutate(func(e *catalogv1.Event) { e.EventType = TypeVideoDeleted }),
		"version mismatch":  mutate(func(e *catalogv1.Event) { e.AggregateVersion = 2 }),
		"missing event id":  mutate(func(e *catalogv1.Event) { e.EventId = "" }),
		"aggregate differs": mutate(func(e *catalogv1.Event) { e.AggregateId = "other" }),
	}
	for name, body := range cases {
		if _, err := Decode(body); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := Decode(mutate(func(*catalogv1.Event) {})); err != nil {
		t.Fatalf("valid envelope rejected: %v", err)
	}
}
