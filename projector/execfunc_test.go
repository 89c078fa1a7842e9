package projector

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// itemsExec is the test read model as a projection.ExecFunc: the
// version-guarded upsert, nothing read back.
var itemsExec = projection.ExecFunc[*structpb.Struct](func(ctx context.Context, db projection.DBTX, ev *projection.Event, s *structpb.Struct) error {
	_, err := db.Exec(ctx, upsertItemView, ev.AggregateID, ev.AggregateVersion, s.GetFields()["name"].GetStringValue(), ev.Type == testevent.TypeDeleted)
	return err
})

// An ExecFunc behind the engine: its outcomes come from the rows its
// statements changed (applied, stale), duplicates never reach it.
func TestExecFuncOutcomesThroughTheEngine(t *testing.T) {
	t.Parallel()
	e, f := newTestEngine(t, itemsExec, "dlq", 6)
	a, b := uuid.New(), uuid.New()
	dup := itemEvent(t, b, 1, false)
	msgs := []msg{
		itemEvent(t, a, 1, false),
		itemEvent(t, a, 2, false),
		itemEvent(t, a, 2, false), // another event at v2: stale behind the first
		dup, dup,
		itemEvent(t, b, 2, true),
	}
	ackers := newAckers(len(msgs))
	processAll(e, msgs, ackers)
	for i, ak := range ackers {
		if acks, nacks := ak.counts(); acks != 1 || nacks != 0 {
			t.Errorf("message %d: acks=%d nacks=%d, want acked", i, acks, nacks)
		}
	}
	for name, want := range map[string]float64{"projector_applied_total": 4, "projector_stale_skipped_total": 1, "projector_duplicate_total": 1} {
		if n := opstest.Metric(t, f.reg, name, nil); n != want {
			t.Errorf("%s = %v, want %v", name, n, want)
		}
	}
	var v int64
	var deleted bool
	if err := f.db.Pool.QueryRow(t.Context(), "SELECT version, deleted_at IS NOT NULL FROM item_view WHERE item_id = $1", b.String()).Scan(&v, &deleted); err != nil || v != 2 || !deleted {
		t.Errorf("item %s: v%d deleted=%t (%v), want the v2 tombstone", b, v, deleted, err)
	}
}

// roundTrips is a transaction that counts what it sends to Postgres.
type roundTrips struct {
	pgx.Tx
	batches, statements int
}

func (r *roundTrips) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	r.batches++
	return r.Tx.SendBatch(ctx, b)
}

func (r *roundTrips) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.statements++
	return r.Tx.Exec(ctx, sql, args...)
}

func (r *roundTrips) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	r.statements++
	return r.Tx.QueryRow(ctx, sql, args...)
}

// structEvent is version v of item id with its payload decoded.
func structEvent(id string, v int64) *projection.Event {
	return &projection.Event{ID: uuid.New(), Type: testevent.TypeUpdated, AggregateID: id, AggregateVersion: v,
		Payload: testevent.Payload(id, v, "n", "")}
}

// HandleTxBatch sends a batch's statements in one round trip, and each
// event's outcome is whether its statement changed a row; HandleTx runs
// them one by one.
func TestExecFuncSendsABatchInOneRoundTrip(t *testing.T) {
	t.Parallel()
	_, f := newTestEngine(t, itemsExec, "dlq", 1)
	ctx := t.Context()
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // the test's own transaction
	rt := &roundTrips{Tx: tx}
	evs := []*projection.Event{structEvent("a", 1), structEvent("a", 2), structEvent("b", 1), structEvent("a", 2)}
	res, err := itemsExec.HandleTxBatch(ctx, rt, evs)
	if err != nil {
		t.Fatal(err)
	}
	want := []projection.Outcome{projection.Applied, projection.Applied, projection.Applied, projection.Stale}
	for i, r := range res {
		if r.Err != nil || r.Outcome != want[i] {
			t.Errorf("event %d: %v %v, want %v", i, r.Outcome, r.Err, want[i])
		}
	}
	if rt.batches != 1 || rt.statements != 0 {
		t.Errorf("%d batches and %d statements sent, want one batch", rt.batches, rt.statements)
	}
	if o, err := itemsExec.HandleTx(ctx, rt, structEvent("b", 1)); err != nil || o != projection.Stale {
		t.Errorf("HandleTx of b v1 again: %v %v, want stale", o, err)
	}
	if o, err := itemsExec.HandleTx(ctx, rt, structEvent("b", 3)); err != nil || o != projection.Applied {
		t.Errorf("HandleTx of b v3: %v %v, want applied", o, err)
	}
	if rt.statements != 2 {
		t.Errorf("HandleTx sent %d statements, want 2", rt.statements)
	}
}

// An ExecFunc that reads cannot be queued: the batch fails with
// ErrExecOnly, and the engine applies it event by event, where the read
// works.
func TestExecFuncThatReadsFallsBackToSingleEvents(t *testing.T) {
	t.Parallel()
	reading := projection.ExecFunc[*structpb.Struct](func(ctx context.Context, db projection.DBTX, ev *projection.Event, s *structpb.Struct) error {
		var one int
		if err := db.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
			return err
		}
		return itemsExec(ctx, db, ev, s)
	})
	e, f := newTestEngine(t, reading, "dlq", 3)
	res, err := reading.HandleTxBatch(t.Context(), nil, []*projection.Event{structEvent("x", 1)})
	if err != nil || !errors.Is(res[0].Err, projection.ErrExecOnly) {
		t.Fatalf("a batch of a reading ExecFunc: %v %v, want ErrExecOnly", res, err)
	}
	msgs := []msg{itemEvent(t, uuid.New(), 1, false), itemEvent(t, uuid.New(), 1, false), itemEvent(t, uuid.New(), 1, false)}
	ackers := newAckers(len(msgs))
	processAll(e, msgs, ackers)
	for i, ak := range ackers {
		if acks, nacks := ak.counts(); acks != 1 || nacks != 0 {
			t.Errorf("message %d: acks=%d nacks=%d, want acked", i, acks, nacks)
		}
	}
	if n := opstest.Metric(t, f.reg, "projector_applied_total", nil); n != 3 {
		t.Errorf("projector_applied_total = %v, want 3", n)
	}
}
