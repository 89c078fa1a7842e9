package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/projection"
)

// txEngine returns an engine for a Postgres read model: every message is
// applied by its TxHandler in the transaction that inserts its inbox row
// (consumer, event_id); a conflicting inbox row is a duplicate and skips the
// handler. A batch is one transaction; a message that fails is rolled back
// to its own savepoint and settled alone. A registered handler that also
// implements projection.TxBatchHandler is given consecutive events of a
// batch in one HandleTxBatch call, as with txBatchEngine.
func txEngine(pool *pgxpool.Pool, reg *projection.Registry[projection.TxHandler], o engineOptions) (*engine, error) {
	if pool == nil || reg == nil {
		return nil, errors.New("projector: txEngine needs a pool and a registry")
	}
	hs := reg.Handlers()
	table := make([]txHandler, len(hs))
	for i, h := range hs {
		table[i].one = h
		// The optional-interface upgrade, decided once per handler.
		table[i].batch, _ = h.(projection.TxBatchHandler)
	}
	return newTxEngine(pool, resolveWith(reg), table, o)
}

// txBatchEngine is txEngine for a registry of TxBatchHandlers: the
// consecutive events of a batch that share a handler (by HandlerID) are
// applied in one HandleTxBatch call.
func txBatchEngine(pool *pgxpool.Pool, reg *projection.Registry[projection.TxBatchHandler], o engineOptions) (*engine, error) {
	if pool == nil || reg == nil {
		return nil, errors.New("projector: txBatchEngine needs a pool and a registry")
	}
	hs := reg.Handlers()
	table := make([]txHandler, len(hs))
	for i, h := range hs {
		table[i] = txHandler{one: h, batch: h}
	}
	return newTxEngine(pool, resolveWith(reg), table, o)
}

func newTxEngine(pool *pgxpool.Pool, resolve resolver, table []txHandler, o engineOptions) (*engine, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	s := &txApplier{handlers: table, pool: pool, consumer: o.Consumer, log: o.Logger}
	return newEngine(o, resolve, s), nil
}

// txHandler is one registered handler: batch is nil when it handles
// events one at a time.
type txHandler struct {
	one   projection.TxHandler
	batch projection.TxBatchHandler
}

type txApplier struct {
	// handlers is indexed by HandlerID.
	handlers []txHandler
	pool     *pgxpool.Pool
	consumer string
	log      *slog.Logger
}

func (s *txApplier) apply(ctx context.Context, items []*item) {
	// A stable lock order across concurrent batches avoids deadlocks on the
	// read model's rows.
	sort.SliceStable(items, func(i, j int) bool {
		a, b := &items[i].ev, &items[j].ev
		if a.AggregateID != b.AggregateID {
			return a.AggregateID < b.AggregateID
		}
		return a.AggregateVersion < b.AggregateVersion
	})
	if !s.applyAll(ctx, items) {
		s.applyEach(ctx, items)
	}
}

// applyAll is the fast path: the whole batch in one transaction without
// savepoints, the inbox rows in one statement. It reports false when a
// message failed and the batch must be redone message by message.
func (s *txApplier) applyAll(ctx context.Context, items []*item) bool {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		failAll(items, fmt.Errorf("beginning transaction: %w", postgres.Classify(err)))
		return true
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	fresh, err := recordInbox(ctx, tx, s.consumer, items)
	if err != nil {
		return s.fallback(items, err)
	}
	for len(fresh) > 0 {
		run := s.handlerRun(fresh)
		if err := s.handleRun(ctx, tx, run); err != nil {
			return s.fallback(items, err)
		}
		fresh = fresh[len(run):]
	}
	if err := announce(ctx, tx, s.consumer, items); err != nil {
		return s.fallback(items, postgres.Classify(err))
	}
	if err := tx.Commit(ctx); err != nil {
		failAll(items, fmt.Errorf("committing batch: %w", postgres.Classify(err)))
	}
	return true
}

// fallback undoes the fast path's results. A single message fails with err
// at once; a batch is redone message by message.
func (s *txApplier) fallback(items []*item, err error) bool {
	for _, it := range items {
		it.result = resultNone
	}
	if len(items) == 1 {
		items[0].err = err
		return true
	}
	return false
}

// applyEach applies every message under its own savepoint, so a failing
// one is rolled back alone.
func (s *txApplier) applyEach(ctx context.Context, items []*item) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		failAll(items, fmt.Errorf("beginning transaction: %w", postgres.Classify(err)))
		return
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	for i, it := range items {
		sp, err := tx.Begin(ctx)
		if err != nil {
			failAll(items[i:], fmt.Errorf("creating savepoint: %w", postgres.Classify(err)))
			break
		}
		res, err := s.applyOne(ctx, sp, it)
		if err != nil {
			it.err = err
			if rbErr := sp.Rollback(ctx); rbErr != nil {
				failAll(items[i+1:], fmt.Errorf("rolling back to savepoint: %w", postgres.Classify(rbErr)))
				break
			}
			continue
		}
		if err := sp.Commit(ctx); err != nil {
			failAll(items[i:], fmt.Errorf("releasing savepoint: %w", postgres.Classify(err)))
			break
		}
		it.result = res
	}
	if err := announce(ctx, tx, s.consumer, items); err != nil {
		failAll(items, postgres.Classify(err))
		return
	}
	if err := tx.Commit(ctx); err != nil {
		failAll(items, fmt.Errorf("committing batch: %w", postgres.Classify(err)))
	}
}

// applyOne records the inbox row and, when it is new, runs the handler.
func (s *txApplier) applyOne(ctx context.Context, tx pgx.Tx, it *item) (result, error) {
	n, err := inboxdb.New(tx).InsertInboxEvent(ctx, inboxdb.InsertInboxEventParams{
		Consumer:         s.consumer,
		EventID:          it.ev.ID,
		AggregateType:    it.ev.AggregateType,
		AggregateID:      it.ev.AggregateID,
		AggregateVersion: it.ev.AggregateVersion,
		EventType:        it.ev.Type,
		MessageID:        pgtype.Text{String: it.ev.MessageID, Valid: it.ev.MessageID != ""},
	})
	if err != nil {
		return resultNone, fmt.Errorf("recording inbox row: %w", postgres.Classify(err))
	}
	if n == 0 {
		return resultDuplicate, nil
	}
	return s.handle(ctx, tx, it)
}

// handlerRun is the longest prefix of items that one TxBatchHandler can
// apply in a single call (consecutive items with the same HandlerID), or
// the first item alone when its handler handles events one at a time.
func (s *txApplier) handlerRun(items []*item) []*item {
	first := items[0].handlerID
	if s.handlers[first].batch == nil {
		return items[:1]
	}
	n := 1
	for n < len(items) && items[n].handlerID == first {
		n++
	}
	return items[:n]
}

// handleRun applies a run of items (see handlerRun) in tx and sets their
// results; the first error fails the run.
func (s *txApplier) handleRun(ctx context.Context, tx pgx.Tx, run []*item) error {
	bh := s.handlers[run[0].handlerID].batch
	if bh == nil || len(run) == 1 {
		res, err := s.handle(ctx, tx, run[0])
		run[0].result = res
		return err
	}
	evs := make([]*projection.Event, len(run))
	for i, it := range run {
		evs[i] = &it.ev
	}
	results, err := bh.HandleTxBatch(ctx, tx, evs)
	if err == nil && len(results) != len(run) {
		err = fmt.Errorf("HandleTxBatch returned %d results for %d events", len(results), len(run))
	}
	if err != nil {
		return fmt.Errorf("applying a batch of %d events: %w", len(run), classifyPg(err))
	}
	for i, r := range results {
		if r.Err != nil {
			return fmt.Errorf("applying %s: %w", run[i].ev.Type, classifyPg(r.Err))
		}
		run[i].result = resultOf(r.Outcome)
	}
	return nil
}

// handle runs the item's handler in tx.
func (s *txApplier) handle(ctx context.Context, tx pgx.Tx, it *item) (result, error) {
	out, err := s.handlers[it.handlerID].one.HandleTx(ctx, tx, &it.ev)
	if err != nil {
		return resultNone, fmt.Errorf("applying %s: %w", it.ev.Type, classifyPg(err))
	}
	return resultOf(out), nil
}

// classifyPg gives unclassified handler errors (typically raw pgx errors)
// the Postgres classification; classified errors pass through.
func classifyPg(err error) error {
	if _, _, classified := errclass.Classification(err); classified {
		return err
	}
	return postgres.Classify(err)
}
