package projector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// InboxRetention deletes one consumer's inbox rows older than the
// retention age, in bounded batches.
type InboxRetention struct {
	db       inboxdb.DBTX
	consumer string
	cfg      RetentionConfig
	pm       *projectionMetrics
	log      *slog.Logger
}

// NewInboxRetention returns the retention of consumer's inbox rows for
// projection name; zero fields of cfg take their defaults.
func NewInboxRetention(db inboxdb.DBTX, name, consumer string, cfg RetentionConfig, m *Metrics, log *slog.Logger) *InboxRetention {
	return &InboxRetention{db: db, consumer: consumer, cfg: cfg.WithDefaults(), pm: m.forProjection(name),
		log: log.With("projection", name, "consumer", consumer)}
}

// Run deletes expired rows now and then every Interval until ctx ends.
// With Age 0 it returns at once.
func (r *InboxRetention) Run(ctx context.Context) {
	if r.cfg.Age <= 0 {
		return
	}
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		if err := r.DeleteExpired(ctx); err != nil && ctx.Err() == nil {
			r.pm.retentionFailed.Inc()
			r.log.Warn("deleting inbox rows past retention", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeleteExpired deletes batches of expired rows until a batch comes back
// short.
func (r *InboxRetention) DeleteExpired(ctx context.Context) error {
	q := inboxdb.New(r.db)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := q.DeleteExpiredInboxEvents(cctx, inboxdb.DeleteExpiredInboxEventsParams{
			Consumer: r.consumer, RetentionSeconds: r.cfg.Age.Seconds(), BatchSize: int32(r.cfg.BatchSize),
		})
		cancel()
		if err != nil {
			return fmt.Errorf("deleting expired inbox rows: %w", postgres.Classify(err))
		}
		r.pm.inboxDeleted.Add(float64(n))
		if n < int64(r.cfg.BatchSize) {
			return nil
		}
	}
	return ctx.Err()
}
