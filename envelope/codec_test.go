package envelope_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	envelopev1 "github.com/eventrelay/eventrelay/api/eventrelay/envelope/v1"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

func codec(t *testing.T) *envelope.Codec {
	t.Helper()
	c, err := envelope.New(
		envelope.Type[*wrapperspb.StringValue]("test.item.renamed"),
		envelope.Type[*emptypb.Empty]("test.item.deleted", 1, 2),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func meta(typ string) outbox.Metadata {
	return outbox.Metadata{
		EventID: uuid.Must(uuid.NewV7()), EventType: typ, AggregateType: "item", AggregateID: "i-1",
		AggregateVersion: 3, SchemaVersion: 1, OccurredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Producer: outbox.Producer{Service: "items", Instance: "pod-1", Version: "v1"},
		Headers:  map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
}

func TestRoundTrip(t *testing.T) {
	c := codec(t)
	m := meta("test.item.renamed")
	body, err := c.Encode(m, wrapperspb.String("new name"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if env.EventID != m.EventID.String() || env.Type != m.EventType || env.AggregateID != "i-1" || env.AggregateType != "item" ||
		env.AggregateVersion != 3 || env.SchemaVersion != 1 || !env.OccurredAt.Equal(m.OccurredAt) {
		t.Fatalf("identity = %+v, want %+v", env, m)
	}
	if p, ok := env.Payload.(*wrapperspb.StringValue); !ok || p.GetValue() != "new name" {
		t.Fatalf("payload = %#v, want *wrapperspb.StringValue \"new name\"", env.Payload)
	}
	raw, _, err := c.Unmarshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if raw.GetProducer().GetInstance() != "pod-1" || raw.GetTraceparent() != m.Headers["traceparent"] {
		t.Fatalf("producer/trace = %v %q", raw.GetProducer(), raw.GetTraceparent())
	}
	if got := c.Types(); strings.Join(got, ",") != "test.item.deleted,test.item.renamed" {
		t.Fatalf("Types = %v", got)
	}
	et, err := c.EventType("test.item.deleted")
	if err != nil || len(et.SchemaVersions) != 2 || et.Decode == nil {
		t.Fatalf("EventType = %+v, %v", et, err)
	}
}

func TestEncodeRefusesMismatch(t *testing.T) {
	c := codec(t)
	if _, err := c.Encode(meta("test.item.deleted"), wrapperspb.String("x")); err == nil {
		t.Fatal("payload of another event type encoded")
	}
	if _, err := c.Encode(meta("test.item.renamed"), wrapperspb.Int64(1)); err == nil {
		t.Fatal("undeclared payload encoded")
	}
}

func TestDecodeRefuses(t *testing.T) {
	c := codec(t)
	good := func(mut func(*envelopev1.Envelope)) []byte {
		a, _ := anypb.New(wrapperspb.String("x"))
		e := &envelopev1.Envelope{EventId: uuid.NewString(), EventType: "test.item.renamed", AggregateId: "i-1", AggregateVersion: 1, SchemaVersion: 1, Payload: a}
		mut(e)
		b, _ := proto.Marshal(e)
		return b
	}
	wrong, _ := anypb.New(&emptypb.Empty{})
	for name, tc := range map[string]struct {
		body   []byte
		reason projection.Reason
	}{
		"garbage":         {[]byte{0xff, 0xff}, projection.PayloadInvalid},
		"no id":           {good(func(e *envelopev1.Envelope) { e.EventId = "" }), projection.PayloadInvalid},
		"no version":      {good(func(e *envelopev1.Envelope) { e.AggregateVersion = 0 }), projection.PayloadInvalid},
		"unknown type":    {good(func(e *envelopev1.Envelope) { e.EventType = "test.item.other" }), projection.EventTypeUnknown},
		"no payload":      {good(func(e *envelopev1.Envelope) { e.Payload = nil }), projection.PayloadInvalid},
		"payload of type": {good(func(e *envelopev1.Envelope) { e.Payload = wrong }), projection.PayloadInvalid},
	} {
		_, err := c.Decode(tc.body)
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if r, _ := projection.Classify(err); r != tc.reason {
			t.Errorf("%s: reason %v, want %v (%v)", name, r, tc.reason, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := envelope.New(envelope.Type[*emptypb.Empty]("a"), envelope.Type[*emptypb.Empty]("b")); err == nil {
		t.Fatal("one message for two names accepted")
	}
	if _, err := envelope.New(envelope.Type[*emptypb.Empty]("a"), envelope.Type[*wrapperspb.StringValue]("a")); err == nil {
		t.Fatal("one name twice accepted")
	}
	if _, err := envelope.New(envelope.Declaration{}); err == nil {
		t.Fatal("zero declaration accepted")
	}
	empty := envelope.Type[*emptypb.Empty]("test.item.deleted")
	str := envelope.Type[*wrapperspb.StringValue]("test.item.renamed")
	for want, decls := range map[string][]envelope.Declaration{
		`aggregate type "" is empty`:                  {envelope.Aggregate("", "test.item.events", empty)},
		`aggregate type " " is empty`:                 {envelope.Aggregate(" ", "test.item.events", empty)},
		`aggregate type "a|b" contains '|'`:           {envelope.Aggregate("a|b", "test.item.events", empty)},
		`aggregate type "a\nb" contains '|'`:          {envelope.Aggregate("a\nb", "test.item.events", empty)},
		`aggregate test.item: topic id ""`:            {envelope.Aggregate("test.item", "", empty)},
		`aggregate test.item: topic id "goog`:         {envelope.Aggregate("test.item", "goog.events", empty)},
		`topic id "no spaces" has ' '`:                {envelope.Aggregate("test.item", "no spaces", empty)},
		"aggregate test.item declares no":             {envelope.Aggregate("test.item", "test.item.events")},
		"holds aggregate test.other":                  {envelope.Aggregate("test.item", "test.item.events", envelope.Aggregate("test.other", "test.other.events", empty))},
		"declared with two topics":                    {envelope.Aggregate("test.item", "test.item.events", empty), envelope.Aggregate("test.item", "test.item.other", str)},
		"event type test.item.deleted declared twice": {envelope.Aggregate("test.item", "test.item.events", empty), envelope.Aggregate("test.other", "test.other.events", empty)},
		"a declaration has no name":                   {envelope.Aggregate("test.item", "test.item.events", envelope.Declaration{})},
	} {
		if _, err := envelope.New(decls...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New: %v, want an error containing %q", err, want)
		}
	}
	// One aggregate declared in two groups, with the same topic.
	c, err := envelope.New(envelope.Aggregate("test.item", "test.item.events", empty), envelope.Aggregate("test.item", "test.item.events", str))
	if err != nil || c.Topic() != "test.item.events" || len(c.Types()) != 2 {
		t.Fatalf("one aggregate in two groups: %v", err)
	}
}

func TestAggregate(t *testing.T) {
	c := envelope.Must(
		envelope.Aggregate("test.item", "test.item.events",
			envelope.Type[*wrapperspb.StringValue]("test.item.renamed"),
			envelope.Type[*emptypb.Empty]("test.item.deleted", 1, 2)),
		envelope.Type[*wrapperspb.Int64Value]("other.thing.counted"), // read only
	)
	if c.AggregateType() != "test.item" || c.Topic() != "test.item.events" {
		t.Fatalf("AggregateType, Topic = %q, %q", c.AggregateType(), c.Topic())
	}
	topics := c.Topics()
	if len(topics) != 1 || topics["test.item"] != "test.item.events" {
		t.Fatalf("Topics = %v", topics)
	}
	topics["x"] = "y" // a copy
	if len(c.Topics()) != 1 {
		t.Fatal("Topics returned the codec's map")
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev, err := c.Event("i-1", 4, &emptypb.Empty{}, at)
	if err != nil {
		t.Fatal(err)
	}
	if ev.AggregateType != "test.item" || ev.Topic != "test.item.events" || ev.AggregateID != "i-1" || ev.AggregateVersion != 4 ||
		ev.EventType != "test.item.deleted" || ev.SchemaVersion != 2 || !ev.OccurredAt.Equal(at) {
		t.Fatalf("Event = %+v", ev)
	}
	if _, err := c.Event("o-1", 1, wrapperspb.Int64(1), at); err == nil || !strings.Contains(err.Error(), "outside an Aggregate") {
		t.Fatalf("Event of a type outside an Aggregate: %v", err)
	}

	// Encode refuses an event of a declared aggregate written for another.
	m := meta("test.item.renamed") // aggregate type "item"
	if _, err := c.Encode(m, wrapperspb.String("x")); err == nil || !strings.Contains(err.Error(), `declared for aggregate type test.item, not "item"`) {
		t.Fatalf("Encode for another aggregate type: %v", err)
	}
	m.AggregateType = "test.item"
	if _, err := c.Encode(m, wrapperspb.String("x")); err != nil {
		t.Fatal(err)
	}
	m.EventType, m.AggregateType = "other.thing.counted", "anything" // no Aggregate: any aggregate type
	if _, err := c.Encode(m, wrapperspb.Int64(1)); err != nil {
		t.Fatal(err)
	}
}

func TestSingleAggregateAccessorsPanic(t *testing.T) {
	for name, c := range map[string]*envelope.Codec{
		"none": codec(t),
		"two": envelope.Must(
			envelope.Aggregate("test.item", "test.item.events", envelope.Type[*emptypb.Empty]("test.item.deleted")),
			envelope.Aggregate("test.other", "test.other.events", envelope.Type[*wrapperspb.StringValue]("test.other.renamed"))),
	} {
		for method, call := range map[string]func() string{"AggregateType": c.AggregateType, "Topic": c.Topic} {
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Codec."+method) {
						t.Errorf("%s: %s did not panic naming itself: %v", name, method, r)
					}
				}()
				call()
			}()
		}
	}
}

func TestHandleTyped(t *testing.T) {
	c := codec(t)
	reg := projection.NewRegistry[projection.TxHandler]()
	var got string
	err := envelope.Handle(reg, c, func(_ context.Context, _ pgx.Tx, _ *projection.Event, p *wrapperspb.StringValue) (projection.Outcome, error) {
		got = p.GetValue()
		return projection.Applied, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := envelope.Handle(reg, c, func(context.Context, pgx.Tx, *projection.Event, *wrapperspb.Int64Value) (projection.Outcome, error) {
		return 0, nil
	}); err == nil {
		t.Fatal("handler of an undeclared payload registered")
	}
	ev, rt := resolveRenamed(t, c, reg, "typed")
	if out, err := rt.Handler.HandleTx(context.Background(), nil, ev); err != nil || out != projection.Applied || got != "typed" {
		t.Fatalf("HandleTx = %v, %v; payload %q", out, err, got)
	}
	ev.Payload = &emptypb.Empty{}
	_, err = rt.Handler.HandleTx(context.Background(), nil, ev)
	if r, _ := projection.Classify(err); r != projection.PayloadInvalid {
		t.Fatalf("mistyped payload: %v", err)
	}
}

// resolveRenamed encodes a test.item.renamed event carrying value and
// resolves its route in reg.
func resolveRenamed(t *testing.T, c *envelope.Codec, reg *projection.Registry[projection.TxHandler], value string) (*projection.Event, projection.Route[projection.TxHandler]) {
	t.Helper()
	m := meta("test.item.renamed")
	body, err := c.Encode(m, wrapperspb.String(value))
	if err != nil {
		t.Fatal(err)
	}
	ev := &projection.Event{ID: m.EventID, Type: m.EventType, AggregateID: "i-1", AggregateVersion: 3, SchemaVersion: 1, Body: body}
	rt, err := reg.Resolve(ev)
	if err != nil {
		t.Fatal(err)
	}
	return ev, rt
}

func TestRegisterAll(t *testing.T) {
	reg := projection.NewRegistry[projection.TxHandler]()
	h := projection.TxHandlerFunc(func(context.Context, pgx.Tx, *projection.Event) (projection.Outcome, error) {
		return projection.Applied, nil
	})
	if err := envelope.RegisterAll[projection.TxHandler](reg, codec(t), h); err != nil {
		t.Fatal(err)
	}
	if got := reg.Types(); len(got) != 2 {
		t.Fatalf("Types = %v", got)
	}
	if err := envelope.RegisterAll[projection.TxHandler](reg, codec(t), h); err == nil {
		t.Fatal("second registration accepted")
	}
}

func TestDecodeEnvelopePrintsThePayload(t *testing.T) {
	c := codec(t)
	body, err := c.Encode(meta("test.item.renamed"), wrapperspb.String("shown"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.DecodeEnvelope(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := protojson.Marshal(m)
	if err != nil || !strings.Contains(string(j), `"shown"`) || !strings.Contains(string(j), "google.protobuf.StringValue") {
		t.Fatalf("protojson = %s, %v", j, err)
	}
	if _, err := c.DecodeEnvelope([]byte("garbage"), nil); err == nil {
		t.Fatal("garbage decoded")
	}
}
