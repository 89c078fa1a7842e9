package upkeep

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// Store reads the outbox's gauges, deletes published rows past their
// retention and measures and rebuilds the outbox's own indexes, on
// Postgres (sqlc/queries/outbox/publisher.sql and maintenance.sql).
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool (search_path = the outbox schema).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Stats feed the gauges.
type Stats struct {
	Pending          int64
	Publishing       int64
	Stuck            int64
	Failed           int64
	OldestPendingAge time.Duration
}

// Stats reads the gauges.
func (s *Store) Stats(ctx context.Context, maxProcessing time.Duration) (Stats, error) {
	r, err := outboxdb.New(s.pool).OutboxStats(ctx, maxProcessing.Seconds())
	if err != nil {
		return Stats{}, fmt.Errorf("reading outbox stats: %w", postgres.Classify(err))
	}
	return Stats{
		Pending: r.Pending, Publishing: r.Publishing, Stuck: r.Stuck, Failed: r.Failed,
		OldestPendingAge: time.Duration(r.OldestPendingAgeSeconds * float64(time.Second)),
	}, nil
}

// DeletePublished deletes up to limit published rows older than age.
func (s *Store) DeletePublished(ctx context.Context, age time.Duration, limit int) (int64, error) {
	n, err := outboxdb.New(s.pool).DeletePublishedOutboxEvents(ctx, outboxdb.DeletePublishedOutboxEventsParams{
		RetentionSeconds: age.Seconds(), BatchSize: int32(limit),
	})
	if err != nil {
		return 0, fmt.Errorf("deleting published rows: %w", postgres.Classify(err))
	}
	return n, nil
}
