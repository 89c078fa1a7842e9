package projection_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/projection"
)

// FuzzResolveCatalogEvent runs a received message (body and the attributes
// a hostile or buggy producer controls) through what the projector does
// before applying it: ParseAttributes, then the catalog registry's
// Resolve (route, schema version, envelope decode, attributes/envelope
// agreement). Every refusal must be a permanent, classified error (the
// message is dead-lettered with that reason); never a panic.
func FuzzResolveCatalogEvent(f *testing.F) {
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := envelope.RegisterAll[projection.TxHandler](reg, events.Codec, catproj.NewVideos()); err != nil {
		f.Fatal(err)
	}
	id := uuid.MustParse("0196f0a0-0000-7000-8000-000000000001")
	for _, m := range []projectiontest.Msg{
		projectiontest.Event(f, id, 1, false), projectiontest.Event(f, id, 2, false), projectiontest.Event(f, id, 3, true),
	} {
		a := m.Attributes
		f.Add(m.Data, a[contract.AttrEventID], a[contract.AttrEventType], a[contract.AttrAggregateID], a[contract.AttrVersion], a[contract.AttrSchemaVersion])
		f.Add(m.Data[:len(m.Data)/3], a[contract.AttrEventID], a[contract.AttrEventType], a[contract.AttrAggregateID], "7", "2")
	}
	f.Add([]byte("garbage"), uuid.NewString(), "catalog.video.nope", "x", "1", "1")
	want := map[projection.Reason]bool{
		projection.AttributesMissing: true, projection.PayloadInvalid: true,
		projection.EventTypeUnknown: true, projection.SchemaUnsupported: true,
	}
	f.Fuzz(func(t *testing.T, body []byte, eventID, eventType, aggregateID, version, schema string) {
		ev, err := projection.ParseAttributes(map[string]string{
			contract.AttrEventID: eventID, contract.AttrEventType: eventType, contract.AttrAggregateID: aggregateID,
			contract.AttrVersion: version, contract.AttrSchemaVersion: schema,
		})
		if err == nil {
			ev.Body = body
			_, err = reg.Resolve(&ev)
		}
		if err != nil {
			if reason, permanent := projection.Classify(err); !permanent || !want[reason] {
				t.Fatalf("refusal %v classified %s (permanent %v)", err, reason, permanent)
			}
			return
		}
		if ev.Payload == nil {
			t.Fatalf("resolved %s without a payload", ev.String())
		}
	})
}
