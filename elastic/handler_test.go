package elastic_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/projection"
)

// newNotesHandler returns a test server, a client of it and the notes
// search projection's handler writing through it.
func newNotesHandler(t *testing.T) (*elastictest.Server, *elastic.Client, *elastic.Handler[proto.Message]) {
	t.Helper()
	es := elastictest.New(elastictest.Options{})
	t.Cleanup(es.Close)
	client, err := elastic.New(elastic.Config{URL: es.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	h, err := elastic.NewHandler(client, notesIndex, noteDoc)
	if err != nil {
		t.Fatal(err)
	}
	return es, client, h
}

func noteEvent(id string, version int64, p proto.Message) *projection.Event {
	return &projection.Event{AggregateID: id, AggregateVersion: version, OccurredAt: time.Now(), Payload: p}
}

// TestHandlerOutcomes: a batch is applied at the aggregate versions; an
// older version is Stale; a document the strict mapping refuses fails
// alone, permanently, as mapping_error; a payload of another type fails
// alone as payload_invalid.
func TestHandlerOutcomes(t *testing.T) {
	_, client, h := newNotesHandler(t)
	ctx := context.Background()
	if res, err := h.HandleBatch(ctx, []*projection.Event{noteEvent("a", 2, wrapperspb.String("two"))}); err != nil || res[0].Outcome != projection.Applied {
		t.Fatalf("first write: %+v, %v", res, err)
	}
	unmapped, err := elastic.NewHandler(client, notesIndex, func(*projection.Event, proto.Message) ([]byte, error) {
		return []byte(`{"surprise":1}`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.HandleBatch(ctx, []*projection.Event{
		noteEvent("a", 1, wrapperspb.String("one")),
		noteEvent("b", 1, &emptypb.Empty{}),
		{AggregateID: "c", AggregateVersion: 1, Payload: "not a message"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Outcome != projection.Stale || res[0].Err != nil {
		t.Errorf("older version: %+v, want Stale", res[0])
	}
	if res[1].Outcome != projection.Applied || res[1].Err != nil {
		t.Errorf("tombstone: %+v, want Applied", res[1])
	}
	if r, perm := projection.Classify(res[2].Err); r != projection.PayloadInvalid || !perm {
		t.Errorf("wrong payload type: %v (%s, permanent %v), want permanent payload_invalid", res[2].Err, r, perm)
	}
	res, err = unmapped.HandleBatch(ctx, []*projection.Event{noteEvent("d", 1, wrapperspb.String("x"))})
	if err != nil {
		t.Fatal(err)
	}
	if r, perm := projection.Classify(res[0].Err); r != projection.Reason(errclass.MappingError) || !perm {
		t.Errorf("unmapped field: %v (%s, permanent %v), want permanent mapping_error", res[0].Err, r, perm)
	}
}

// TestHandlerClassifiesClusterFailures: 429, 502, 503 and 504 fail the
// batch transiently; 401 and 403 as permission_denied, which the projector
// holds (environmental), never dead-letters; none is the events' fault.
func TestHandlerClassifiesClusterFailures(t *testing.T) {
	es, _, h := newNotesHandler(t)
	ctx := context.Background()
	if _, err := h.HandleBatch(ctx, []*projection.Event{noteEvent("a", 1, wrapperspb.String("one"))}); err != nil {
		t.Fatal(err)
	}
	for status, want := range map[int]errclass.Reason{
		http.StatusTooManyRequests: errclass.RateLimited, http.StatusBadGateway: errclass.Unavailable,
		http.StatusServiceUnavailable: errclass.Unavailable, http.StatusGatewayTimeout: errclass.Timeout,
		http.StatusUnauthorized: errclass.PermissionDenied, http.StatusForbidden: errclass.PermissionDenied,
	} {
		es.Inject(status, time.Minute)
		_, err := h.HandleBatch(ctx, []*projection.Event{noteEvent("a", 2, wrapperspb.String("two"))})
		es.Inject(0, 0)
		r, perm := projection.Classify(err)
		if err == nil || perm || r != projection.Reason(want) {
			t.Errorf("%d: %v (%s, permanent %v), want transient %s", status, err, r, perm, want)
		}
		if env := errclass.Of(err).Environmental(); env != (status == 401 || status == 403) {
			t.Errorf("%d: environmental %v", status, env)
		}
	}
	var re *elastic.ResponseError
	es.Inject(http.StatusForbidden, time.Minute)
	_, err := h.HandleBatch(ctx, []*projection.Event{noteEvent("a", 2, wrapperspb.String("two"))})
	es.Inject(0, 0)
	if !errors.As(err, &re) || re.Status != http.StatusForbidden {
		t.Errorf("403: %v, want the ResponseError in the chain", err)
	}
}

// TestNewHandlerNamesTheBadArgument: a missing client, function or an
// invalid Index is refused naming it.
func TestNewHandlerNamesTheBadArgument(t *testing.T) {
	client, err := elastic.New(elastic.Config{URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	for want, idx := range map[string]elastic.Index{
		"Index.Alias":    {Alias: "Notes", Body: notesIndex.Body},
		"Index.Body":     {Alias: "notes"},
		"not a JSON obj": {Alias: "notes", Body: []byte(`[1]`)},
	} {
		if _, err := elastic.NewHandler(client, idx, noteDoc); err == nil || !strings.Contains(err.Error(), strings.Fields(want)[0]) {
			t.Errorf("%+v: %v, want an error naming %s", idx, err, want)
		}
	}
	if _, err := elastic.NewHandler[proto.Message](nil, notesIndex, noteDoc); err == nil || !strings.Contains(err.Error(), "client") {
		t.Errorf("nil client: %v", err)
	}
	if _, err := elastic.NewHandler[proto.Message](client, notesIndex, nil); err == nil || !strings.Contains(err.Error(), "doc") {
		t.Errorf("nil doc: %v", err)
	}
	if _, err := elastic.HandleAll(notesCodec, client, notesIndex, func(*projection.Event, *wrapperspb.StringValue) ([]byte, error) { return nil, nil }); err == nil || !strings.Contains(err.Error(), "notes.note.deleted") {
		t.Errorf("a declared payload the handler does not take: %v, want it named", err)
	}
}
