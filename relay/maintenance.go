package relay

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/maintenance"
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
		r.log.Warn("extending lease", "lock_token", token, "error", err)
		return true
	case err != nil:
		return false
	case n == 0:
		r.log.Warn("lease lost: the batch was taken over; its outcomes will be fenced out", "lock_token", token, "rows", len(ids))
		return false
	}
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
				r.log.Error("reclaiming expired claims", "error", err)
			}
			return
		}
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

// statsLoop refreshes the database-wide gauges.
func (r *Relay) statsLoop(ctx context.Context) {
	every(ctx, r.opts.StatsInterval, func(ctx context.Context) {
		cctx, cancel := context.WithTimeout(ctx, r.opts.StatsInterval)
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
	})
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
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		n, err := r.upkeep.DeletePublished(cctx, r.opts.Retention, r.opts.RetentionBatchSize)
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

// refreshIndexGauges reads the index sizes into outbox_index_bytes.
func (r *Relay) refreshIndexGauges(ctx context.Context) ([]maintenance.IndexStat, error) {
	stats, err := r.upkeep.OutboxIndexes(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range stats {
		r.m.IndexBytes.WithLabelValues(s.Name).Set(float64(s.Bytes))
	}
	return stats, nil
}

// maintainIndexes refreshes outbox_index_bytes and rebuilds the bloated
// outbox indexes (one replica at a time). It runs after each retention
// round.
func (r *Relay) maintainIndexes(ctx context.Context) {
	u := r.opts.indexUpkeep()
	stats, err := r.refreshIndexGauges(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.m.ReindexFailed.Inc()
			r.log.Warn("reading outbox index sizes", "error", err)
		}
		return
	}
	bloated := u.Bloated(stats)
	if len(bloated) == 0 {
		return
	}
	names := make([]string, len(bloated))
	for i, s := range bloated {
		names[i] = s.Name
		r.log.Info("outbox index bloated: rebuilding it", "index", s.Name, "bytes", s.Bytes,
			"entries", int64(s.StatsEntries), "needed_bytes", s.NeededBytes, "bloat", s.Bloat(), "bloat_factor", u.BloatFactor)
	}
	locked, done, err := r.upkeep.RebuildIndexes(ctx, names)
	if !locked && err == nil {
		r.log.Info("outbox index rebuild skipped: another session holds the maintenance lock", "indexes", names)
		return
	}
	for _, d := range done {
		if d.Err != nil {
			r.m.ReindexFailed.Inc()
			r.log.Warn("rebuilding outbox index", "index", d.Name, "error", d.Err)
			continue
		}
		r.m.Reindexed.WithLabelValues(d.Name).Inc()
		r.m.IndexBytes.WithLabelValues(d.Name).Set(float64(d.After))
		r.log.Info("rebuilt outbox index", "index", d.Name, "bytes_before", d.Before, "bytes_after", d.After,
			"took_ms", d.Took.Milliseconds())
	}
	if err != nil && ctx.Err() == nil {
		r.m.ReindexFailed.Inc()
		r.log.Warn("rebuilding outbox indexes", "error", err)
	}
}

// IndexRebuild is one outbox index rebuilt by RebuildIndexes.
type IndexRebuild struct {
	Index string
	// Bloat is the index's size at its last VACUUM/ANALYZE over what its
	// live entries need.
	Bloat float64
	// BytesBefore and BytesAfter are its sizes on disk.
	BytesBefore, BytesAfter int64
	Took                    time.Duration
	// Err is why it was not rebuilt (the next index was tried).
	Err error
}

// ErrMaintenanceLocked is returned by RebuildIndexes when another session
// (a relay's upkeep, or an operator) holds the schema's outbox maintenance
// lock: nothing was rebuilt.
var ErrMaintenanceLocked = errors.New("relay: another session holds the outbox maintenance lock")

// RebuildIndexes runs the index upkeep of one retention round now, on the
// outbox of the pool's schema: it rebuilds (REINDEX INDEX CONCURRENTLY,
// writes and claims go on) the outbox indexes that o.ReindexBloatFactor
// and o.ReindexMinBytes call bloated, one after the other, under the
// schema's maintenance lock. For deployments that set ReindexOff and
// rebuild in a maintenance window. Only o's reindex fields are used; their
// zero values take the defaults.
func RebuildIndexes(ctx context.Context, pool *pgxpool.Pool, o Options) ([]IndexRebuild, error) {
	o.ReindexOff = false
	o = o.withDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	s := maintenance.NewStore(pool)
	stats, err := s.OutboxIndexes(ctx)
	if err != nil {
		return nil, err
	}
	bloated := o.indexUpkeep().Bloated(stats)
	if len(bloated) == 0 {
		return nil, nil
	}
	names := make([]string, len(bloated))
	for i, st := range bloated {
		names[i] = st.Name
	}
	locked, done, err := s.RebuildIndexes(ctx, names)
	if err == nil && !locked {
		return nil, ErrMaintenanceLocked
	}
	out := make([]IndexRebuild, len(done))
	for i, d := range done {
		out[i] = IndexRebuild{Index: d.Name, Bloat: bloated[i].Bloat(), BytesBefore: d.Before, BytesAfter: d.After, Took: d.Took, Err: d.Err}
	}
	return out, err
}
