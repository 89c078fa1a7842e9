package projection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
)

// The golden messages of testdata/catalog-v1-event.json were written by the
// catalog's encoder of the catalog.v1.Event envelope, before the catalog
// moved onto eventrelay.envelope.v1.Envelope: video ...0a created (v1) and
// updated (v2), video ...0b created (v1) and deleted (v2).
var (
	goldenA = uuid.MustParse("0196f0a0-0000-7000-8000-00000000000a")
	goldenB = uuid.MustParse("0196f0a0-0000-7000-8000-00000000000b")
)

func goldenMessages(t *testing.T) []*pubsub.Message {
	t.Helper()
	b, err := os.ReadFile("testdata/catalog-v1-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct {
		Attributes map[string]string `json:"attributes"`
		Data       []byte            `json:"data"`
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	out := make([]*pubsub.Message, len(golden))
	for i, g := range golden {
		out[i] = &pubsub.Message{ID: fmt.Sprintf("golden-%d", i), Data: g.Data, Attributes: g.Attributes}
	}
	return out
}

// catalogProjector registers the catalog's projections as the projector
// daemon does (RegisterEnabled), on a fresh database and a search test
// server, for Deliver.
func catalogProjector(t *testing.T) (*projector.Projector, *harness, *elastic.Client) {
	t.Helper()
	h := newHarness(t)
	srv := elastictest.New(elastictest.Options{})
	t.Cleanup(srv.Close)
	es, err := elastic.New(elastic.Config{URL: srv.URL, RequestTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(es.Close)
	c := catconf.DefaultProjections()
	createTopic(t, h.ps, c.Videos.DeadLetterTopic)
	createTopic(t, h.ps, c.Search.DeadLetterTopic)
	p, err := projector.New(h.pool, h.ps.Client, projector.Options{Logger: h.log})
	if err != nil {
		t.Fatal(err)
	}
	if err := catproj.RegisterEnabled(p, c, batchConfig(10), time.Hour, catproj.NewVideos(), es); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	return p, h, es
}

func deliver(t *testing.T, p *projector.Projector, name string, msgs ...*pubsub.Message) []projector.Delivery {
	t.Helper()
	out, err := p.Deliver(context.Background(), name, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCatalogV1EventStillProjects: messages in the catalog's former
// envelope, still in subscriptions when the new code deploys, project
// into both read models; new envelopes apply on top of them.
func TestCatalogV1EventStillProjects(t *testing.T) {
	p, h, es := catalogProjector(t)
	for _, name := range []string{"videos", "search"} {
		for i, m := range goldenMessages(t) {
			if d := deliver(t, p, name, m)[0]; d.Outcome != projector.OutcomeApplied {
				t.Fatalf("%s: golden message %d: %s %s %v", name, i, d.Outcome, d.Reason, d.Err)
			}
		}
	}
	a, ok := h.row(goldenA)
	want := projectiontest.Video(goldenA, 2)
	if !ok || a.Version != 2 || a.Title != want.GetTitle() || a.Description != want.GetDescription() || a.Status != "published" ||
		a.MediaStatus != "ready" || a.DeletedAt.Valid || a.LastEventID != uuid.MustParse("0196f0a1-0000-7000-8000-000000000002") ||
		!a.OccurredAt.Equal(time.Date(2026, 11, 20, 10, 0, 2, 123456000, time.UTC)) {
		t.Fatalf("video_projection %s = %+v (found %v), want the golden v2", goldenA, a, ok)
	}
	if b, ok := h.row(goldenB); !ok || b.Version != 2 || !b.DeletedAt.Valid {
		t.Fatalf("video_projection %s = %+v (found %v), want the golden v2 tombstone", goldenB, b, ok)
	}
	if src, v, found := h.doc(es, goldenA); !found || v != 2 || src["title"] != want.GetTitle() || src[elastic.FieldDeleted] != false {
		t.Fatalf("search document %s = %v v%d (found %v)", goldenA, src, v, found)
	}
	if src, v, found := h.doc(es, goldenB); !found || v != 2 || src[elastic.FieldDeleted] != true {
		t.Fatalf("search document %s = %v v%d (found %v), want the tombstone", goldenB, src, v, found)
	}

	// A new envelope continues the aggregate; an old one redelivered is a
	// duplicate.
	next := projectiontest.Event(t, goldenA, 3, false)
	for _, name := range []string{"videos", "search"} {
		applied := deliver(t, p, name, &pubsub.Message{ID: "new", Data: next.Data, Attributes: next.Attributes})[0]
		again := deliver(t, p, name, goldenMessages(t)[1])[0]
		if applied.Outcome != projector.OutcomeApplied || again.Outcome != projector.OutcomeDuplicate {
			t.Fatalf("%s: new v3 %+v, then golden v2 again %+v; want applied, duplicate", name, applied, again)
		}
	}
	if a, _ := h.row(goldenA); a.Version != 3 || a.Title != projectiontest.Video(goldenA, 3).GetTitle() {
		t.Fatalf("video_projection %s = v%d %q after the new envelope, want v3", goldenA, a.Version, a.Title)
	}
}

// TestNewEnvelopeRoundTrips: what the catalog writes today is an
// eventrelay.envelope.v1.Envelope, and it projects.
func TestNewEnvelopeRoundTrips(t *testing.T) {
	p, h, _ := catalogProjector(t)
	id := uuid.New()
	msgs := []projectiontest.Msg{projectiontest.Event(t, id, 1, false), projectiontest.Event(t, id, 2, true)}
	for i, m := range msgs {
		decoded, err := events.Codec.DecodeEnvelope(m.Data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(decoded.ProtoReflect().Descriptor().FullName()); got != "eventrelay.envelope.v1.Envelope" {
			t.Fatalf("message %d is a %s", i, got)
		}
		d := deliver(t, p, "videos", &pubsub.Message{ID: fmt.Sprint(i), Data: m.Data, Attributes: m.Attributes})
		if d[0].Outcome != projector.OutcomeApplied {
			t.Fatalf("message %d: %+v", i, d[0])
		}
	}
	if r, ok := h.row(id); !ok || r.Version != 2 || !r.DeletedAt.Valid {
		t.Fatalf("video_projection %s = %+v (found %v), want the v2 tombstone", id, r, ok)
	}
}

// TestUnreadableBodyIsDeadLetteredAsPayloadInvalid: a body in neither
// envelope, or an old envelope whose payload is not its aggregate's state,
// is dead-lettered as payload_invalid, not retried nor misread.
func TestUnreadableBodyIsDeadLetteredAsPayloadInvalid(t *testing.T) {
	p, _, _ := catalogProjector(t)
	id := uuid.New()
	attrs := func(typ string) map[string]string {
		return projectiontest.Attributes(outbox.Metadata{EventID: uuid.Must(uuid.NewV7()), EventType: typ,
			AggregateType: events.AggregateType, AggregateID: id.String(), AggregateVersion: 1,
			SchemaVersion: events.SchemaVersion, OccurredAt: time.Now().UTC()})
	}
	mismatched := attrs(events.TypeVideoCreated)
	body, err := proto.Marshal(&catalogv1.Event{
		EventId: mismatched[contract.AttrEventID], EventType: events.TypeVideoCreated, AggregateType: events.AggregateType,
		AggregateId: id.String(), AggregateVersion: 1, SchemaVersion: events.SchemaVersion,
		Payload: &catalogv1.Event_VideoCreated{VideoCreated: &catalogv1.VideoCreated{Video: projectiontest.Video(uuid.New(), 1)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := deliver(t, p, "videos",
		&pubsub.Message{ID: "garbage", Data: []byte{0xff, 0xff, 0xff}, Attributes: attrs(events.TypeVideoCreated)},
		&pubsub.Message{ID: "text", Data: []byte("not a protobuf"), Attributes: attrs(events.TypeVideoUpdated)},
		&pubsub.Message{ID: "other video", Data: body, Attributes: mismatched},
	)
	for i, d := range out {
		if d.Outcome != projector.OutcomeDeadLettered || d.Reason != projection.PayloadInvalid {
			t.Errorf("message %d: %s %s %v, want dead_lettered payload_invalid", i, d.Outcome, d.Reason, d.Err)
		}
	}
	if e := fmt.Sprint(out[0].Err); !strings.Contains(e, "neither an eventrelay.envelope.v1.Envelope") {
		t.Errorf("garbage: error %q does not say which formats were tried", e)
	}
}
