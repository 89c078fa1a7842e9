package relay

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// keepLease extends the batch's lease every third of a lease until stop is
// called. If the claim is gone (taken over), it stops extending: the
// fenced outcome writes will then change nothing.
func (r *Relay) keepLease(b claim.Batch) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ids := b.IDs()
	go func() {
		defer close(done)
		t := time.NewTicker(r.opts.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !r.extend(ctx, b.Token, ids) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (r *Relay) extend(ctx context.Context, token uuid.UUID, ids []int64) bool {
	ctx, cancel := context.WithTimeout(ctx, r.opts.Lease/3)
	defer cancel()
	n, err := r.claims.ExtendLease(ctx, token, ids, r.opts.Lease)
	switch {
	case err != nil && ctx.Err() == nil:
		r.m.StoreErrors.WithLabelValues("extend_lease").Inc()
		r.refused(stmtLease, err)
		r.log.Warn("extending lease", "lock_token", token, "error", err)
		return true
	case err != nil:
		return false
	case n == 0:
		r.log.Warn("lease lost: the batch was taken over; its outcomes will be fenced out", "lock_token", token, "rows", len(ids))
		return false
	}
	r.accepted(stmtLease)
	return true
}

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

// reclaimLoop returns expired claims to pending every reclaim interval.
func (r *Relay) reclaimLoop(ctx context.Context) {
	every(ctx, r.opts.ReclaimInterval, func(ctx context.Context) {
		// The reclaim queues for its partitions' claim locks behind claims
		// of them (other replicas' during a handover). Bounded by the interval alone, it gave up every tick while
		// slow claims held the lock in turn, and expired claims stayed
		// stuck; a lease is how long a takeover may reasonably wait.
		cctx, cancel := context.WithTimeout(ctx, max(r.opts.ReclaimInterval, r.opts.Lease))
		defer cancel()
		// Only the replica's own partitions: each partition's owner takes
		// over its expired claims, under the same partition locks as claims.
		parts := r.own.Partitions()
		if len(parts) == 0 {
			return
		}
		taken, err := r.claims.Reclaim(cctx, r.opts.MaxProcessing, parts)
		if err != nil {
			if ctx.Err() == nil {
				r.m.StoreErrors.WithLabelValues("reclaim").Inc()
				r.refused(stmtReclaim, err)
				r.log.Error("reclaiming expired claims", "error", err)
			}
			return
		}
		r.accepted(stmtReclaim)
		if len(taken) == 0 {
			return
		}
		r.m.Takeovers.Add(float64(len(taken)))
		from := map[string]int{}
		for _, t := range taken {
			from[t.PreviousWorker]++
		}
		for w, n := range from {
			r.log.Warn("took over expired claims", "previous_worker", w, "rows", n)
		}
		r.signal()
	})
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
