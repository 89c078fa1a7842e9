package projection

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DBTX is what a sqlc-generated package for pgx/v5 takes (its New(db
// DBTX)): an ExecFunc writes the read model through one.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ErrExecOnly is what an ExecFunc's Query and QueryRow return while its
// statements are queued for a batch: the batch is then applied again
// event by event, where reads work.
var ErrExecOnly = errors.New("projection: an ExecFunc's statements are queued for one round trip: Exec only, no reads")

// ExecFunc is a TxBatchHandler for a read model whose change is writes
// only: fn applies one event with Exec statements through db (sqlc's :exec
// and :execrows queries), each guarded by the aggregate version, and need
// not read what they return. The event is Applied when its statements
// changed a row and Stale when they changed none (no statement is Stale
// too).
//
// For a batch, HandleTxBatch runs fn for every event with db queueing the
// statements, and sends them all in one round trip (pgx.Batch), in event
// order. HandleTx, the engine's event-by-event path, runs them in tx as fn
// makes them. An error of fn, or a read through db while statements are
// queued (ErrExecOnly), makes the engine apply the batch event by event.
// The payload is typed as in TxFunc.
type ExecFunc[P any] func(ctx context.Context, db DBTX, ev *Event, p P) error

var _ TxBatchHandler = ExecFunc[any](nil)

// HandleTx implements TxHandler.
func (f ExecFunc[P]) HandleTx(ctx context.Context, tx pgx.Tx, ev *Event) (Outcome, error) {
	p, err := payloadAs[P](ev)
	if err != nil {
		return 0, err
	}
	db := &countingTx{Tx: tx}
	if err := f(ctx, db, ev, p); err != nil {
		return 0, err
	}
	return outcomeOfRows(db.rows), nil
}

// HandleTxBatch implements TxBatchHandler.
func (f ExecFunc[P]) HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*Event) ([]Result, error) {
	out := make([]Result, len(evs))
	q := queue{b: &pgx.Batch{}}
	queued := make([]int, len(evs)) // statements of each event
	for i, ev := range evs {
		p, err := payloadAs[P](ev)
		if err == nil {
			before := q.b.Len()
			err = f(ctx, q, ev, p)
			queued[i] = q.b.Len() - before
		}
		if err != nil {
			out[i].Err = err
			return out, nil
		}
	}
	if q.b.Len() == 0 {
		for i := range out {
			out[i].Outcome = Stale
		}
		return out, nil
	}
	br := tx.SendBatch(ctx, q.b)
	for i := range evs {
		var rows int64
		for range queued[i] {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return nil, fmt.Errorf("event %s: %w", evs[i], err)
			}
			rows += tag.RowsAffected()
		}
		out[i].Outcome = outcomeOfRows(rows)
	}
	return out, br.Close()
}

// HandleExec registers fn for et in reg, as Handle does for a TxFunc:
// the engine applies a batch of et's events in one round trip.
func HandleExec[P any](reg *Registry[TxHandler], et EventType, fn func(ctx context.Context, db DBTX, ev *Event, p P) error) error {
	if fn == nil {
		return fmt.Errorf("projection: event type %s: handler is nil", et.Name)
	}
	return reg.Register(et, ExecFunc[P](fn))
}

func outcomeOfRows(n int64) Outcome {
	if n == 0 {
		return Stale
	}
	return Applied
}

// countingTx is tx, summing the rows its Exec statements changed.
type countingTx struct {
	pgx.Tx
	rows int64
}

func (c *countingTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := c.Tx.Exec(ctx, sql, args...)
	c.rows += tag.RowsAffected()
	return tag, err
}

// queue queues Exec statements into b; it has nothing to read.
type queue struct{ b *pgx.Batch }

func (q queue) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (queue) Query(context.Context, string, ...any) (pgx.Rows, error) { return nil, ErrExecOnly }

func (queue) QueryRow(context.Context, string, ...any) pgx.Row { return failedRow{} }

type failedRow struct{}

func (failedRow) Scan(...any) error { return ErrExecOnly }
