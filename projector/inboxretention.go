package projector

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// inboxRetention deletes one consumer's inbox rows older than the
// retention age, in bounded batches.
type inboxRetention struct {
	db       inboxdb.DBTX
	consumer string
	// age keeps rows this long after they were processed; interval is
	// the pause between rounds; batchSize bounds each DELETE.
	age, interval time.Duration
	batchSize     int
	pm            *projectionMetrics
	log           *slog.Logger
}

// newInboxRetention returns the retention of consumer's inbox rows for
// projection name, keeping them for age; o (with its defaults applied)
// gives the interval and batch size.
func newInboxRetention(db inboxdb.DBTX, name, consumer string, age time.Duration, o Options, m *metrics, log *slog.Logger) *inboxRetention {
	return &inboxRetention{db: db, consumer: consumer, age: age, interval: o.InboxRetentionInterval, batchSize: o.InboxRetentionBatchSize,
		pm:  m.forProjection(name),
		log: log.With("projection", name, "consumer", consumer)}
}

// Run deletes expired rows now and then every Interval until ctx ends.
// With Age 0 it returns at once.
func (r *inboxRetention) Run(ctx context.Context) {
	if r.age <= 0 {
		return
	}
	t := time.NewTicker(r.interval)
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
func (r *inboxRetention) DeleteExpired(ctx context.Context) error {
	q := inboxdb.New(r.db)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := q.DeleteExpiredInboxEvents(cctx, inboxdb.DeleteExpiredInboxEventsParams{
			Consumer: r.consumer, RetentionSeconds: r.age.Seconds(), BatchSize: int32(r.batchSize),
		})
		cancel()
		if err != nil {
			return fmt.Errorf("deleting expired inbox rows: %w", postgres.Classify(err))
		}
		r.pm.inboxDeleted.Add(float64(n))
		if n < int64(r.batchSize) {
			return nil
		}
	}
	return ctx.Err()
}
