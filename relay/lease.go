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
