package envelope_test

import (
	"context"
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
