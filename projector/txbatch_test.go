package projector

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projection"
)

// batchCounting is the test read model as a TxBatchHandler that
// counts its calls and fails the events of chosen aggregates in both paths.
type batchCounting struct {
	view items
	fail map[string]error

	mu         sync.Mutex
	batchCalls []int // events per HandleTxBatch call
	txCalls    int
}

func (h *batchCounting) HandleTx(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	h.mu.Lock()
	h.txCalls++
	h.mu.Unlock()
	if err := h.fail[ev.AggregateID]; err != nil {
		return 0, err
	}
	return h.view.HandleTx(ctx, tx, ev)
}

func (h *batchCounting) HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*projection.Event) ([]projection.Result, error) {
	h.mu.Lock()
	h.batchCalls = append(h.batchCalls, len(evs))
	h.mu.Unlock()
	for i, ev := range evs {
		if err := h.fail[ev.AggregateID]; err != nil {
			out := make([]projection.Result, len(evs))
			out[i].Err = err
			return out, nil
		}
	}
	return h.view.HandleTxBatch(ctx, tx, evs)
}

func newAckers(n int) []*testAcker {
	out := make([]*testAcker, n)
	for i := range out {
		out[i] = newAcker()
	}
	return out
}

// A TxBatchHandler gets a batch's new events in one call; outcomes per
// event (applied, stale) are kept, duplicates never reach it.
func TestTxBatchHandlerAppliesABatchInOneCall(t *testing.T) {
	t.Parallel()
	h := &batchCounting{view: items{}}
	e, f := newTestEngine(t, h, "dlq", 7)
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	dup := itemEvent(t, b, 1, false)
	msgs := []msg{
		itemEvent(t, a, 1, false),
		itemEvent(t, a, 2, false),
		itemEvent(t, a, 2, false), // another event at v2: stale behind the first
		dup, dup,                  // one delivery is a duplicate (same event id)
		itemEvent(t, c, 1, false),
		itemEvent(t, c, 2, true),
	}
	ackers := newAckers(len(msgs))
	processAll(e, msgs, ackers) // 7 messages = one full batch
	for i, ak := range ackers {
		if acks, nacks := ak.counts(); acks != 1 || nacks != 0 {
			t.Errorf("message %d: acks=%d nacks=%d, want acked", i, acks, nacks)
		}
	}
	if len(h.batchCalls) != 1 || h.batchCalls[0] != 6 || h.txCalls != 0 {
		t.Fatalf("HandleTxBatch calls %v, HandleTx calls %d: want one batch call of the 6 new events and no single calls", h.batchCalls, h.txCalls)
	}
	for _, want := range []struct {
		id      uuid.UUID
		version int64
		deleted bool
	}{{a, 2, false}, {b, 1, false}, {c, 2, true}} {
		var v int64
		var deleted bool
		err := f.db.Pool.QueryRow(context.Background(), "SELECT version, deleted_at IS NOT NULL FROM item_view WHERE item_id = $1", want.id.String()).Scan(&v, &deleted)
		if err != nil || v != want.version || deleted != want.deleted {
			t.Errorf("item %s: v%d deleted=%t (%v), want v%d deleted=%t", want.id, v, deleted, err, want.version, want.deleted)
		}
	}
	for name, want := range map[string]float64{"projector_applied_total": 5, "projector_stale_skipped_total": 1, "projector_duplicate_total": 1} {
		if n := opstest.Metric(t, f.reg, name, nil); n != want {
			t.Errorf("%s = %v, want %v", name, n, want)
		}
	}
}

// A failure in the batch call redoes the batch event by event, so only the
// failing event is settled as failed.
func TestTxBatchHandlerFailureFallsBackToSingleEvents(t *testing.T) {
	t.Parallel()
	bad := uuid.New()
	h := &batchCounting{view: items{}, fail: map[string]error{
		bad.String(): projection.Permanent(projection.MappingError, errors.New("cannot map")),
	}}
	e, f := newTestEngine(t, h, "dlq", 4)
	var msgs []msg
	for range 3 {
		msgs = append(msgs, itemEvent(t, uuid.New(), 1, false))
	}
	msgs = append(msgs, itemEvent(t, bad, 1, false))
	ackers := newAckers(len(msgs))
	processAll(e, msgs, ackers)
	if len(h.batchCalls) != 1 || h.txCalls != 4 {
		t.Fatalf("HandleTxBatch calls %v, HandleTx calls %d: want one failed batch call, then 4 single calls", h.batchCalls, h.txCalls)
	}
	for i, ak := range ackers {
		if acks, nacks := ak.counts(); acks != 1 || nacks != 0 {
			t.Errorf("message %d: acks=%d nacks=%d, want acked (the bad one after dead-lettering)", i, acks, nacks)
		}
	}
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM item_view").Scan(&n); err != nil || n != 3 {
		t.Errorf("projected items = %d (%v), want 3", n, err)
	}
	if got := opstest.Metric(t, f.reg, "projector_dead_lettered_total", map[string]string{"reason": "mapping_error"}); got != 1 {
		t.Errorf("dead_lettered_total{mapping_error} = %v, want 1", got)
	}
}
