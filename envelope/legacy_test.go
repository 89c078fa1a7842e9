package envelope_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
)

// A service's former envelope, here a google.protobuf.Struct of
// {"id", "type", "aggregate", "version", "name"}.
func readStruct(s *structpb.Struct) (projection.Envelope, error) {
	f := s.GetFields()
	if f["type"] == nil {
		return projection.Envelope{}, errors.New("no type")
	}
	return projection.Envelope{
		EventID: f["id"].GetStringValue(), Type: f["type"].GetStringValue(), AggregateID: f["aggregate"].GetStringValue(),
		AggregateVersion: int64(f["version"].GetNumberValue()), SchemaVersion: 1, Payload: wrapperspb.String(f["name"].GetStringValue()),
	}, nil
}

func legacyBody(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	s, err := structpb.NewStruct(fields)
	if err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWithLegacyReadsBothFormats(t *testing.T) {
	c := codec(t).WithLegacy(envelope.Legacy(readStruct))
	old := legacyBody(t, map[string]any{"id": "e-1", "type": "test.item.renamed", "aggregate": "i-1", "version": 2, "name": "old"})
	env, err := c.Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := env.Payload.(*wrapperspb.StringValue); !ok || p.GetValue() != "old" || env.AggregateVersion != 2 || env.AggregateID != "i-1" {
		t.Fatalf("legacy body decoded as %+v", env)
	}
	if m, err := c.DecodeEnvelope(old, nil); err != nil || m.ProtoReflect().Descriptor().FullName() != "google.protobuf.Struct" {
		t.Fatalf("DecodeEnvelope = %v, %v; want the legacy message", m, err)
	}
	body, err := c.Encode(meta("test.item.renamed"), wrapperspb.String("new"))
	if err != nil {
		t.Fatal(err)
	}
	if env, err := c.Decode(body); err != nil || env.Payload.(*wrapperspb.StringValue).GetValue() != "new" {
		t.Fatalf("Envelope decoded as %+v, %v", env, err)
	}
	if _, err := codec(t).Decode(old); err == nil {
		t.Fatal("a codec without WithLegacy read a legacy body")
	}
}

func TestWithLegacyRefuses(t *testing.T) {
	c := codec(t).WithLegacy(envelope.Legacy(readStruct))
	for name, tc := range map[string]struct {
		body   []byte
		reason projection.Reason
	}{
		"garbage":       {[]byte{0xff, 0xff}, projection.PayloadInvalid},
		"read fails":    {legacyBody(t, map[string]any{"id": "e-1"}), projection.PayloadInvalid},
		"no identity":   {legacyBody(t, map[string]any{"type": "test.item.renamed", "aggregate": "i-1", "version": 1}), projection.PayloadInvalid},
		"unknown type":  {legacyBody(t, map[string]any{"id": "e-1", "type": "test.item.other", "aggregate": "i-1", "version": 1}), projection.EventTypeUnknown},
		"wrong payload": {legacyBody(t, map[string]any{"id": "e-1", "type": "test.item.deleted", "aggregate": "i-1", "version": 1}), projection.PayloadInvalid},
	} {
		_, err := c.Decode(tc.body)
		if err == nil {
			t.Errorf("%s: decoded", name)
			continue
		}
		if r, permanent := projection.Classify(err); r != tc.reason || !permanent {
			t.Errorf("%s: reason %v (permanent %v), want %v: %v", name, r, permanent, tc.reason, err)
		}
		if tc.reason == projection.PayloadInvalid && !strings.Contains(err.Error(), "nor a legacy google.protobuf.Struct") {
			t.Errorf("%s: error does not name both formats: %v", name, err)
		}
	}
}
