package testevent

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/outbox"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	ev := Item(ID(7), 3, 5)
	meta := outbox.Metadata{EventID: uuid.New(), EventType: ev.EventType, AggregateType: ev.AggregateType,
		AggregateID: ev.AggregateID, AggregateVersion: 1 << 60, SchemaVersion: 2,
		OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	body, err := Encode(meta, ev.Payload)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if env.EventID != meta.EventID.String() || env.Type != TypeUpdated || env.AggregateID != ID(7) ||
		env.AggregateVersion != 1<<60 || env.SchemaVersion != 2 || !env.OccurredAt.Equal(meta.OccurredAt) {
		t.Fatalf("decoded %+v from %+v", env, meta)
	}
	p, ok := env.Payload.(*structpb.Struct)
	if !ok || p.Fields["padding"].GetStringValue() != "xxxxx" || p.Fields["version"].GetStringValue() != "3" {
		t.Fatalf("payload %v", env.Payload)
	}
	if _, err := Decode([]byte("not a struct \xff")); err == nil {
		t.Fatal("garbage decoded")
	}
}
