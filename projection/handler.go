package projection

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// Outcome is what applying one event did to the read model.
type Outcome int

const (
	// Applied: the read model now reflects the event.
	Applied Outcome = iota + 1
	// Stale: the read model already holds this aggregate at the same or a
	// newer version; nothing changed. Counted, then acked.
	Stale
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case Stale:
		return "stale"
	}
	return "unknown"
}

// TxHandler applies events to a Postgres read model. HandleTx runs in tx,
// the transaction that also records (consumer, event_id) in the inbox: the
// engine has already established that this consumer has not applied the
// event before, and commits the read model change and the inbox row
// together. tx may be a savepoint of a larger batch transaction: HandleTx
// must not commit or roll it back, and must guard every write by the
// aggregate version so that an older event never overwrites a newer one.
type TxHandler interface {
	HandleTx(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error)
}

// TxBatchHandler is a TxHandler that can also apply a whole batch at once,
// typically by pipelining its statements (pgx.Batch) so a batch costs one
// round trip instead of one per event. The engine calls HandleTxBatch with
// the new (not duplicate) events of a batch, sorted by aggregate and
// version, in the transaction that recorded their inbox rows.
//
// It returns one Result per event, in order. Any Result error, or a
// returned error, makes the engine roll the batch back and apply it again
// event by event with HandleTx, each under its own savepoint, so that a
// failing event is settled alone: HandleTxBatch need not isolate failures.
// The rules of HandleTx apply (no commit or rollback of tx; every write
// guarded by the aggregate version).
type TxBatchHandler interface {
	TxHandler
	HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*Event) ([]Result, error)
}

// TxHandlerFunc adapts a function to TxHandler.
type TxHandlerFunc func(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error)

// HandleTx implements TxHandler.
func (f TxHandlerFunc) HandleTx(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error) {
	return f(ctx, tx, ev)
}

// Result is the per-event answer of a BatchHandler: an Outcome, or an error
// classified like any handler error.
type Result struct {
	Outcome Outcome
	Err     error
}

// BatchHandler applies events to a non-transactional read model (a search index).
// It must be idempotent and version-guarded on its own (e.g. external
// versioning), because the engine records the inbox row only after the read model
// accepted the event and may deliver an event again.
//
// HandleBatch returns one Result per event, in order, or an error that
// applies to the whole batch (e.g. the read model is unreachable).
type BatchHandler interface {
	HandleBatch(ctx context.Context, evs []*Event) ([]Result, error)
}

// BatchHandlerFunc adapts a function to BatchHandler.
type BatchHandlerFunc func(ctx context.Context, evs []*Event) ([]Result, error)

// HandleBatch implements BatchHandler.
func (f BatchHandlerFunc) HandleBatch(ctx context.Context, evs []*Event) ([]Result, error) {
	return f(ctx, evs)
}
