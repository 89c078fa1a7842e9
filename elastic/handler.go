package elastic

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/projection"
)

// DocFunc returns the source of the document an event leaves in the index:
// a JSON object with FieldDeleted false, or a tombstone (Tombstone) for an
// event that deletes its aggregate. p is the event's payload typed as P.
// It must be a pure function of the event: the projector may call it again
// for a redelivery, and a reindex wants the same document. An error
// classified with projection.Permanent (payload_invalid: the event carries
// a state the document cannot hold) dead-letters the event; any other
// error is retried.
type DocFunc[P any] func(ev *projection.Event, p P) ([]byte, error)

// Handler is a search projection: a projection.BatchHandler that writes the
// document DocFunc returns for each event into Index.Alias, the whole batch
// in one bulk request, each document with version_type=external at the
// event's aggregate version. Its results:
//
//   - Applied: the document is indexed at the event's version;
//   - Stale: Elasticsearch answered 409, it holds that version or a newer
//     one (a redelivery, a replay, a reordering): skipped, not an error;
//   - an item refused as mapping_error (400: the document does not fit the
//     mapping) fails alone and is dead-lettered with its reason;
//   - 429, 502, 503, 5xx and timeouts fail the batch transiently (the
//     messages are redelivered), and 401/403 as permission_denied, which
//     the projector holds ("blocked/<projection>") instead of
//     dead-lettering: a rotated credential stops the stream until it is
//     fixed.
//
// Before its first batch the handler creates the index and the alias from
// Index.Body when the alias does not exist (Client.EnsureIndex); while that
// fails, every batch fails transiently.
type Handler[P any] struct {
	client *Client
	index  Index
	doc    DocFunc[P]

	mu      sync.Mutex
	ensured bool
}

var _ projection.BatchHandler = (*Handler[any])(nil)

// NewHandler returns the handler writing idx through client with doc.
// Errors name the argument (and the Index field) that is missing or
// invalid.
func NewHandler[P any](client *Client, idx Index, doc DocFunc[P]) (*Handler[P], error) {
	if client == nil {
		return nil, errors.New("elastic: NewHandler: client is nil")
	}
	if doc == nil {
		return nil, errors.New("elastic: NewHandler: doc is nil")
	}
	if err := idx.Validate(); err != nil {
		return nil, err
	}
	return &Handler[P]{client: client, index: idx, doc: doc}, nil
}

// HandleAll returns the registry of a search projection, for
// projector.Projection.Batch: every event type codec declares goes to one
// Handler (NewHandler), so a batch is one bulk request. P is what the
// payloads share (an interface such as interface{ GetOrder() *v1.Order },
// or proto.Message); it fails, registering nothing, when a declared
// payload does not implement P.
func HandleAll[P any](codec *envelope.Codec, client *Client, idx Index, doc DocFunc[P]) (*projection.Registry[projection.BatchHandler], error) {
	if err := envelope.Implements[P](codec); err != nil {
		return nil, err
	}
	h, err := NewHandler(client, idx, doc)
	if err != nil {
		return nil, err
	}
	reg := projection.NewRegistry[projection.BatchHandler]()
	if err := envelope.RegisterAll[projection.BatchHandler](reg, codec, h); err != nil {
		return nil, err
	}
	return reg, nil
}

// Index is the index written (its alias).
func (h *Handler[P]) Index() Index { return h.index }

// HandleBatch implements projection.BatchHandler.
func (h *Handler[P]) HandleBatch(ctx context.Context, evs []*projection.Event) ([]projection.Result, error) {
	if err := h.ensureIndex(ctx); err != nil {
		return nil, err
	}
	results := make([]projection.Result, len(evs))
	docs := make([]Doc, 0, len(evs))
	pos := make([]int, 0, len(evs))
	for i, ev := range evs {
		src, err := h.document(ev)
		if err != nil {
			results[i].Err = err
			continue
		}
		docs = append(docs, Doc{ID: ev.AggregateID, Version: ev.AggregateVersion, Source: src})
		pos = append(pos, i)
	}
	items, err := h.client.BulkIndex(ctx, h.index.Alias, docs)
	if err != nil {
		return nil, err
	}
	for k, it := range items {
		r := &results[pos[k]]
		switch {
		case it.Err != nil:
			r.Err = it.Err
		case it.Stale:
			r.Outcome = projection.Stale
		default:
			r.Outcome = projection.Applied
		}
	}
	return results, nil
}

// document types the payload and calls doc.
func (h *Handler[P]) document(ev *projection.Event) ([]byte, error) {
	p, ok := ev.Payload.(P)
	if !ok {
		return nil, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("event %s: payload is %T, want %T", ev, ev.Payload, *new(P)))
	}
	return h.doc(ev, p)
}

// ensureIndex creates the index behind the alias on first use (and keeps
// trying on later batches while Elasticsearch is unreachable). Failing to
// create it is never the messages' fault: the error is transient.
func (h *Handler[P]) ensureIndex(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ensured {
		return nil
	}
	if _, err := h.client.EnsureIndex(ctx, h.index.Alias, h.index.Body); err != nil {
		return projection.Retry(fmt.Errorf("ensuring search index %s: %w", h.index.Alias, err))
	}
	h.ensured = true
	return nil
}
