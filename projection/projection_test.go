package projection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/projection"
)

func attrs(id uuid.UUID) map[string]string {
	return map[string]string{
		"event_id": id.String(), "event_type": "t.created", "aggregate_type": "t",
		"aggregate_id": "a1", "version": "3", "schema_version": "1",
	}
}

func TestParseAttributesNamesMissingKeys(t *testing.T) {
	a := attrs(uuid.New())
	delete(a, "version")
	delete(a, "event_id")
	_, err := projection.ParseAttributes(a)
	reason, permanent := projection.Classify(err)
	if reason != projection.AttributesMissing || !permanent || !strings.Contains(err.Error(), "event_id, version") {
		t.Fatalf("got %v (%s, permanent=%v)", err, reason, permanent)
	}
	a = attrs(uuid.New())
	a["version"] = "x"
	_, err = projection.ParseAttributes(a)
	if r, _ := projection.Classify(err); r != projection.PayloadInvalid || !strings.Contains(err.Error(), "version") {
		t.Fatalf("bad version: %v", err)
	}
	ev, err := projection.ParseAttributes(attrs(uuid.New()))
	if err != nil || ev.AggregateVersion != 3 || ev.SchemaVersion != 1 || ev.AggregateID != "a1" {
		t.Fatalf("valid attributes: %+v %v", ev, err)
	}
}

type handler struct{ name string }

func TestRegistryResolve(t *testing.T) {
	id := uuid.New()
	reg := projection.NewRegistry[*handler]()
	h := &handler{"h"}
	decode := func(b []byte) (projection.Envelope, error) {
		switch string(b) {
		case "bad":
			return projection.Envelope{}, errors.New("truncated")
		case "other-version":
			return projection.Envelope{EventID: id.String(), Type: "t.created", AggregateID: "a1", AggregateVersion: 4, Payload: "p"}, nil
		}
		return projection.Envelope{EventID: id.String(), Type: "t.created", AggregateID: "a1", AggregateVersion: 3, SchemaVersion: 1, Payload: "p"}, nil
	}
	if err := reg.Register(projection.EventType{Name: "t.created", SchemaVersions: []int32{1}, Decode: decode}, h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(projection.EventType{Name: "t.created", SchemaVersions: []int32{1}, Decode: decode}, h); err == nil {
		t.Fatal("duplicate registration accepted")
	}
	if err := reg.Register(projection.EventType{Name: "t.updated", Decode: decode}, h); err == nil {
		t.Fatal("registration without schema versions accepted")
	}

	cases := []struct {
		name   string
		mutate func(map[string]string)
		body   string
		want   projection.Reason
	}{
		{"ok", nil, "good", ""},
		{"unknown type", func(a map[string]string) { a["event_type"] = "t.exploded" }, "good", projection.EventTypeUnknown},
		{"unknown schema", func(a map[string]string) { a["schema_version"] = "2" }, "good", projection.SchemaUnsupported},
		{"malformed body", nil, "bad", projection.PayloadInvalid},
		{"attribute/body mismatch", nil, "other-version", projection.PayloadInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := attrs(id)
			if tc.mutate != nil {
				tc.mutate(a)
			}
			ev, err := projection.ParseAttributes(a)
			if err != nil {
				t.Fatal(err)
			}
			ev.Body = []byte(tc.body)
			got, err := reg.Resolve(&ev)
			if tc.want == "" {
				if err != nil || got.Handler != h || ev.Payload != "p" {
					t.Fatalf("Resolve = %v, %v, payload %v", got.Handler, err, ev.Payload)
				}
				return
			}
			reason, permanent := projection.Classify(err)
			if reason != tc.want || !permanent {
				t.Fatalf("Resolve error %v classified %s permanent=%v, want %s", err, reason, permanent, tc.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err       error
		reason    projection.Reason
		permanent bool
	}{
		{projection.Permanent(projection.MappingError, errors.New("bad field")), projection.MappingError, true},
		{fmt.Errorf("wrapped: %w", projection.Permanent("", errors.New("x"))), projection.PayloadInvalid, true},
		{projection.Retry(errors.New("flaky")), projection.Unknown, false},
		{projection.Retry(errclass.New(errclass.RateLimited, errors.New("429"))), projection.RateLimited, false},
		{errclass.New(errclass.Unavailable, errors.New("down")), projection.Unavailable, false},
		{errclass.New(errclass.MappingError, errors.New("400")), projection.MappingError, true},
		{errors.New("who knows"), projection.Unknown, false},
		{context.Canceled, projection.Timeout, false},
	}
	for _, tc := range cases {
		r, p := projection.Classify(tc.err)
		if r != tc.reason || p != tc.permanent {
			t.Errorf("Classify(%v) = %s,%v want %s,%v", tc.err, r, p, tc.reason, tc.permanent)
		}
	}
	if projection.Permanent(projection.PayloadInvalid, nil) != nil || projection.Retry(nil) != nil {
		t.Error("nil errors must stay nil")
	}
}

// One handler value registered for several event types is one handler
// (one HandlerID, batched together); every function registration is a
// handler of its own, even two closures of one literal; nil is refused.
func TestRegistryHandlerIDs(t *testing.T) {
	decode := func([]byte) (projection.Envelope, error) { return projection.Envelope{}, nil }
	et := func(name string) projection.EventType {
		return projection.EventType{Name: name, SchemaVersions: []int32{1}, Decode: decode}
	}
	shared := &handler{"shared"}
	ptrs := projection.NewRegistry[*handler]()
	for _, n := range []string{"a", "b"} {
		if err := ptrs.Register(et(n), shared); err != nil {
			t.Fatal(err)
		}
	}
	if err := ptrs.Register(et("c"), &handler{"shared"}); err != nil {
		t.Fatal(err)
	}
	if err := ptrs.Register(et("d"), nil); err == nil {
		t.Fatal("nil handler accepted")
	}
	if hs := ptrs.Handlers(); len(hs) != 2 || hs[0] != shared {
		t.Fatalf("Handlers() = %v, want [shared, other]", hs)
	}

	funcs := projection.NewRegistry[projection.BatchHandler]()
	mk := func(name string) projection.BatchHandlerFunc {
		return func(context.Context, []*projection.Event) ([]projection.Result, error) {
			return nil, errors.New(name)
		}
	}
	for _, n := range []string{"a", "b"} {
		if err := funcs.Register(et(n), mk(n)); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]int{}
	for _, n := range []string{"a", "b"} {
		ev := projection.Event{ID: uuid.New(), Type: n, AggregateID: "x", AggregateVersion: 1, SchemaVersion: 1}
		rt, err := funcs.Resolve(&ev)
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = rt.HandlerID
		if _, err := funcs.Handlers()[rt.HandlerID].HandleBatch(context.Background(), nil); err == nil || err.Error() != n {
			t.Fatalf("Handlers()[%d] of %s answers %v", rt.HandlerID, n, err)
		}
	}
	if ids["a"] == ids["b"] {
		t.Fatalf("two closures share HandlerID %d", ids["a"])
	}
}
