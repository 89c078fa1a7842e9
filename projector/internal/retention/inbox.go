// Package retention deletes the inbox rows a consumer no longer needs: the
// inbox only has to absorb redeliveries, and an event redelivered after
// its row was deleted meets the read model's version guard instead.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// Inbox deletes one consumer's inbox rows older than Age, in bounded
// batches. Set every field.
type Inbox struct {
	DB       inboxdb.DBTX
	Consumer string
	// Age keeps rows this long after they were processed (0: Run returns
	// at once); Interval is the pause between rounds; BatchSize bounds
	// each DELETE.
	Age, Interval time.Duration
	BatchSize     int
	// Deleted counts the rows deleted, Failed the rounds that failed.
	Deleted, Failed prometheus.Counter
	Log             *slog.Logger
}

// Run deletes expired rows now and then every Interval until ctx ends.
// With Age 0 it returns at once.
func (r *Inbox) Run(ctx context.Context) {
	if r.Age <= 0 {
		return
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if err := r.DeleteExpired(ctx); err != nil && ctx.Err() == nil {
			r.Failed.Inc()
			r.Log.Warn("deleting inbox rows past retention", "error", err)
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
func (r *Inbox) DeleteExpired(ctx context.Context) error {
	q := inboxdb.New(r.DB)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := q.DeleteExpiredInboxEvents(cctx, inboxdb.DeleteExpiredInboxEventsParams{
			Consumer: r.Consumer, RetentionSeconds: r.Age.Seconds(), BatchSize: int32(r.BatchSize),
		})
		cancel()
		if err != nil {
			return fmt.Errorf("deleting expired inbox rows: %w", postgres.Classify(err))
		}
		r.Deleted.Add(float64(n))
		if n < int64(r.BatchSize) {
			return nil
		}
	}
	return ctx.Err()
}
