package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/admin"
	"github.com/eventrelay/eventrelay/outbox"
)

// TestDecoderReadsBothEnvelopes: `dlq show` prints a dead letter in the
// current envelope with its payload, and one the catalog wrote before the
// switch as its catalog.v1.Event.
func TestDecoderReadsBothEnvelopes(t *testing.T) {
	dec := admin.Hooks().Decoder
	id := uuid.NewString()
	video := &catalogv1.Video{Id: id, Title: "shown title", Version: 1}
	body, err := events.Codec.Encode(outbox.Metadata{
		EventID: uuid.Must(uuid.NewV7()), EventType: events.TypeVideoCreated, AggregateType: events.AggregateType,
		AggregateID: id, AggregateVersion: 1, SchemaVersion: events.SchemaVersion, OccurredAt: time.Now(),
	}, &catalogv1.VideoCreated{Video: video})
	if err != nil {
		t.Fatal(err)
	}
	old, err := proto.Marshal(&catalogv1.Event{
		EventId: uuid.NewString(), EventType: events.TypeVideoCreated, AggregateType: events.AggregateType,
		AggregateId: id, AggregateVersion: 1, SchemaVersion: 1,
		Payload: &catalogv1.Event_VideoCreated{VideoCreated: &catalogv1.VideoCreated{Video: video}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for want, b := range map[string][]byte{"eventrelay.envelope.v1.Envelope": body, "catalog.v1.Event": old} {
		m, err := dec.Decode(b, nil)
		if err != nil {
			t.Fatalf("%s: %v", want, err)
		}
		j, err := protojson.Marshal(m)
		if got := m.ProtoReflect().Descriptor().FullName(); string(got) != want || err != nil || !strings.Contains(string(j), "shown title") {
			t.Fatalf("decoded %s as %s: %s (%v)", want, got, j, err)
		}
	}
	if _, err := dec.Decode([]byte("\xff\xfe not an envelope"), nil); err == nil {
		t.Fatal("garbage decoded")
	}
}
