package projector

import (
	"context"
	"fmt"
	"time"
)

// stalledFor is how long the engine has held received messages without
// acking any (0 while it acks, or holds none).
func (e *engine) stalledFor() time.Duration {
	if e.inflight.Load() == 0 {
		return 0
	}
	return time.Since(time.Unix(0, e.progress.Load()))
}

// DetectStalls makes the receiver report a stall: received messages held
// and none acked for after. Then projector_stalled is 1 and, with a
// health, the readiness check "stall/<projection>" fails naming how long;
// both clear with the next ack. 0 turns it off. Call it before Start.
func (r *receiver) DetectStalls(after time.Duration) {
	r.stallAfter = after
	if r.health != nil && after > 0 {
		r.health.AddCheck("stall/"+r.engine.Name(), r.stallCheck)
	}
}

func (r *receiver) stallCheck(context.Context) error {
	if d := r.engine.stalledFor(); d >= r.stallAfter {
		return fmt.Errorf("projection %s holds %d message(s) and applied nothing for %s (stall after %s): its store or handler hangs, or Pub/Sub stopped taking acks",
			r.engine.Name(), r.engine.Inflight(), d.Round(time.Second), r.stallAfter)
	}
	return nil
}

// watchStall keeps projector_stalled current and logs a stall once.
func (r *receiver) watchStall(ctx context.Context) {
	if r.stallAfter <= 0 {
		return
	}
	t := time.NewTicker(max(min(time.Second, r.stallAfter/2), time.Millisecond)) // a ticker needs a positive period
	defer t.Stop()
	stalled := false
	for {
		select {
		case <-ctx.Done():
			r.engine.pm.stalled.Set(0)
			return
		case <-t.C:
		}
		now := r.engine.stalledFor() >= r.stallAfter
		if now != stalled {
			stalled = now
			if now {
				r.engine.pm.stalled.Set(1)
				r.log.Error("projection stalled: messages held, none applied", "stall_after", r.stallAfter.String(), "inflight", r.engine.Inflight())
			} else {
				r.engine.pm.stalled.Set(0)
				r.log.Info("projection applies again")
			}
		}
	}
}
