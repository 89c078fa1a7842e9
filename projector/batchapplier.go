package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/projection"
)

// batchEngine returns an engine for a non-transactional, idempotent read model
// (a search index). Per batch it skips events the consumer's inbox already
// holds, hands the rest to the BatchHandler(s), and records inbox rows for
// the events the read model accepted.
//
// The inbox is accounting here, not the guard: the read model's own versioning
// makes redelivery harmless. So Postgres being unreachable does not stop
// applying: the pre-check is skipped and the recording failure counted
// (projector_inbox_record_failed_total), and the messages are still acked.
func batchEngine(pool *pgxpool.Pool, reg *projection.Registry[projection.BatchHandler], o engineOptions) (*engine, error) {
	if pool == nil || reg == nil {
		return nil, errors.New("projector: batchEngine needs a pool and a registry")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	e := newEngine(o, resolveWith(reg), nil)
	e.applier = &batchApplier{handlers: reg.Handlers(), pool: pool, consumer: o.Consumer, log: e.log, pm: e.pm}
	return e, nil
}

type batchApplier struct {
	// handlers is indexed by HandlerID.
	handlers []projection.BatchHandler
	pool     *pgxpool.Pool
	consumer string
	log      *slog.Logger
	pm       *projectionMetrics
}

func (s *batchApplier) apply(ctx context.Context, items []*item) {
	todo := s.skipSeen(ctx, items)
	for _, g := range groupByHandler(todo) {
		s.handle(ctx, g)
	}
	s.record(ctx, items)
	if err := announce(ctx, s.pool, s.consumer, items); err != nil {
		s.log.Warn("announcing applied events failed; reads waiting for them time out", "error", err.Error())
	}
}

// skipSeen marks events the inbox already holds as duplicates and returns
// the others.
func (s *batchApplier) skipSeen(ctx context.Context, items []*item) []*item {
	ids := make([]uuid.UUID, len(items))
	for i, it := range items {
		ids[i] = it.ev.ID
	}
	seen, err := inboxdb.New(s.pool).SeenInboxEvents(ctx, inboxdb.SeenInboxEventsParams{Consumer: s.consumer, EventIds: ids})
	if err != nil {
		s.log.Warn("inbox pre-check failed; applying the whole batch (the read model is idempotent)",
			"error", postgres.Classify(err).Error(), "batch", len(items))
		return items
	}
	dup := make(map[uuid.UUID]bool, len(seen))
	for _, id := range seen {
		dup[id] = true
	}
	todo := items[:0:0]
	for _, it := range items {
		if dup[it.ev.ID] {
			it.result = resultDuplicate
		} else {
			todo = append(todo, it)
		}
	}
	return todo
}

func (s *batchApplier) handle(ctx context.Context, g []*item) {
	evs := make([]*projection.Event, len(g))
	for i, it := range g {
		evs[i] = &it.ev
	}
	results, err := s.handlers[g[0].handlerID].HandleBatch(ctx, evs)
	if err == nil && len(results) != len(g) {
		err = projection.Retry(fmt.Errorf("handler returned %d results for %d events", len(results), len(g)))
	}
	if err != nil {
		failAll(g, fmt.Errorf("applying batch: %w", err))
		return
	}
	for i, r := range results {
		if r.Err != nil {
			g[i].err = r.Err
		} else {
			g[i].result = resultOf(r.Outcome)
		}
	}
}

// record inserts inbox rows for the events the read model accepted. An event
// whose row already exists was applied by a concurrent delivery: it becomes
// a duplicate.
func (s *batchApplier) record(ctx context.Context, items []*item) {
	var accepted []*item
	for _, it := range items {
		if it.err == nil && (it.result == resultApplied || it.result == resultStale) {
			accepted = append(accepted, it)
		}
	}
	if len(accepted) == 0 {
		return
	}
	if _, err := recordInbox(ctx, s.pool, s.consumer, accepted); err != nil {
		s.pm.inboxFailed.Add(float64(len(accepted)))
		s.log.Warn("recording inbox rows failed; the read model already accepted the events",
			"error", err.Error(), "events", len(accepted))
	}
}

// groupByHandler splits items by their route's HandlerID, keeping order
// within a group, so each handler gets one HandleBatch call per batch.
func groupByHandler(items []*item) [][]*item {
	var groups [][]*item
	index := map[int]int{} // HandlerID -> position in groups
	for _, it := range items {
		i, ok := index[it.handlerID]
		if !ok {
			i = len(groups)
			index[it.handlerID] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], it)
	}
	return groups
}
