package relay

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// stallWatch holds what stall detection needs, all of it already at hand:
// the time of this replica's last successful publish (batch outcomes) and
// the creation time of the oldest pending row as of the last stats read.
// The age of that row grows between reads; a publish clears a stall at
// once.
type stallWatch struct {
	lastPublish   atomic.Int64 // unix nanoseconds; the relay's start before any publish
	oldestCreated atomic.Int64 // unix nanoseconds; 0: nothing pending
	inflight      atomic.Int64 // rows this replica has claimed and not completed
	reported      bool         // the gauge's and log's state; statsLoop only
}

// published records a successful publish (or the start of the watch).
func (w *stallWatch) published(at time.Time) { w.lastPublish.Store(at.UnixNano()) }

// oldestPending records a stats read: the oldest pending row was age old
// at now (0: none pending). A claimed row is not pending: while this
// replica holds claimed rows, a read that finds none pending keeps the
// previous oldest (rows that fail to publish go back and forth).
func (w *stallWatch) oldestPending(age time.Duration, now time.Time) {
	if age <= 0 {
		if w.inflight.Load() == 0 {
			w.oldestCreated.Store(0)
		}
		return
	}
	w.oldestCreated.Store(now.Add(-age).UnixNano())
}

// stalled reports whether the replica is stalled at now: it owns
// partitions, the oldest pending row is at least StallAfter old and the
// replica published nothing for StallAfter. It returns how long nothing
// was published and the oldest row's age.
func (r *Relay) stalled(now time.Time) (idle, oldest time.Duration, ok bool) {
	if r.opts.StallAfterOff {
		return 0, 0, false
	}
	created := r.stall.oldestCreated.Load()
	if created == 0 || len(r.own.Partitions()) == 0 {
		return 0, 0, false
	}
	idle = now.Sub(time.Unix(0, r.stall.lastPublish.Load()))
	oldest = now.Sub(time.Unix(0, created))
	return idle, oldest, idle >= r.opts.StallAfter && oldest >= r.opts.StallAfter
}

// stallCheck is the readiness check "stall": it fails while the replica
// is stalled, naming for how long.
func (r *Relay) stallCheck(context.Context) error {
	if idle, oldest, ok := r.stalled(time.Now()); ok {
		return fmt.Errorf("publishing stalled: this replica owns %d partition(s) and published nothing for %s while the oldest pending row is %s old (stall after %s): Pub/Sub does not answer, every topic is blocked, or rows wait behind failed heads (relayctl status)",
			len(r.own.Partitions()), idle.Round(time.Second), oldest.Round(time.Second), r.opts.StallAfter)
	}
	return nil
}

// watchStall keeps outbox_stalled current and logs each change; statsLoop
// calls it after each stats read.
func (r *Relay) watchStall() {
	idle, oldest, ok := r.stalled(time.Now())
	if ok == r.stall.reported {
		return
	}
	r.stall.reported = ok
	if ok {
		r.m.Stalled.Set(1)
		r.log.Error("publishing stalled: pending rows wait and nothing was published",
			"stall_after", r.opts.StallAfter.String(), "idle", idle.Round(time.Second).String(), "oldest_pending_age", oldest.Round(time.Second).String())
		return
	}
	r.m.Stalled.Set(0)
	r.log.Info("publishing progresses again")
}
