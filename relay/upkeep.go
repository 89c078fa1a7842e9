package relay

import (
	"context"
	"time"
)

// every runs f now and then every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// The gauges' read counts the pending rows, so its cost grows with the
// backlog (about 0.5 s of a backend at 200,000 pending rows during a
// drain): after a read that took d, the next one waits statsBudget × d
// when that is longer than StatsInterval (a read keeps a backend busy at
// most 1/statsBudget of the time), up to statsMaxWait, well inside the
// stale-stats alert's 2 minutes. statsTimeout, or StatsInterval when
// longer, bounds one read.
const (
	statsBudget  = 50
	statsMaxWait = time.Minute
	statsTimeout = time.Minute
)

// statsWait is how long the stats loop waits after a read that took d.
func statsWait(interval, d time.Duration) time.Duration {
	return max(interval, min(statsMaxWait, statsBudget*d))
}

// statsLoop refreshes the database-wide gauges and, when that worked,
// outbox_stats_refreshed_timestamp_seconds, every StatsInterval or, while
// a large backlog makes the read slow, every statsWait.
func (r *Relay) statsLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		r.refreshStats(ctx)
		t.Reset(statsWait(r.opts.StatsInterval, time.Since(start)))
	}
}

// refreshStats is one read of the gauges.
func (r *Relay) refreshStats(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, max(r.opts.StatsInterval, statsTimeout))
	defer cancel()
	s, err := r.upkeep.Stats(cctx, r.opts.MaxProcessing)
	if err != nil {
		if ctx.Err() == nil {
			r.m.StoreErrors.WithLabelValues("stats").Inc()
			r.log.Warn("reading outbox stats", "error", err)
		}
		return
	}
	r.m.Lag.Set(float64(s.Pending))
	r.m.OldestAge.Set(s.OldestPendingAge.Seconds())
	r.m.Stuck.Set(float64(s.Stuck))
	r.m.FailedRows.Set(float64(s.Failed))
	r.m.StatsRefreshed.SetToCurrentTime()
	r.stall.oldestPending(s.OldestPendingAge, time.Now())
	r.watchStall()
}

// retentionLoop deletes published rows older than the retention (when
// enabled), in bounded batches, until a batch comes back short; then it
// reads the outbox's index sizes and rebuilds those that bloated
// (maintainIndexes).
func (r *Relay) retentionLoop(ctx context.Context) {
	every(ctx, r.opts.RetentionInterval, func(ctx context.Context) {
		if !r.opts.RetentionOff {
			r.deletePublished(ctx)
		}
		r.maintainIndexes(ctx)
	})
}

// deletePublished is one retention round.
func (r *Relay) deletePublished(ctx context.Context) {
	r.deleteRounds(ctx, r.upkeep.DeletePublished)
}

// deleteRounds runs delete (one bounded batch of rows older than the
// retention) until a batch comes back short.
func (r *Relay) deleteRounds(ctx context.Context, delete func(context.Context, time.Duration, int) (int64, error)) {
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := delete(cctx, r.opts.Retention, r.opts.RetentionBatchSize)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.m.StoreErrors.WithLabelValues("retention").Inc()
				r.log.Warn("deleting published rows past retention", "error", err)
			}
			return
		}
		r.m.RetentionDeleted.Add(float64(n))
		if n < int64(r.opts.RetentionBatchSize) {
			return
		}
	}
}
