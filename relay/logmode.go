package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/logread"
)

// logReadWait bounds one wait for the stream, so the loop ticks liveness,
// confirms and notices a drain.
const logReadWait = 250 * time.Millisecond

// errRecoveryCut ends a recovery whose session ended (a hold).
var errRecoveryCut = errors.New("the session ended during the slot's recovery")

// recoveryPage is how many rows a slot's recovery reads at a time.
const recoveryPage = 1000

// runLog is run in ModeLog: the slot's reader, the subscription watch
// and retention (of the rows below every slot's published horizon, and
// of rows the polling relay marked published); no claim, lease,
// partition, reclaim or gauge of pending rows.
func (r *Relay) runLog(ctx context.Context) {
	bg, stopBG := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.subs.run(bg)
	}()
	go func() {
		defer wg.Done()
		every(bg, r.opts.RetentionInterval, func(ctx context.Context) {
			if !r.opts.RetentionOff {
				r.deletePublished(ctx)
				r.deleteRounds(ctx, r.logStore.DeletePublished)
			}
		})
	}()
	r.logLoop(ctx)
	stopBG()
	wg.Wait()
	r.log.Info("outbox relay stopped")
}

// logLoop is ModeLog's engine: wait to become the slot's reader (one per
// slot: a session advisory lock, and Postgres refuses a second stream of
// an active slot), then run sessions until the drain. A session that
// ended on a hold or an error is followed by another after its delay,
// from the slot's confirmed position.
func (r *Relay) logLoop(ctx context.Context) {
	var leader *logread.Leader
	defer func() {
		if leader != nil {
			leader.Release()
		}
		r.logm.state(readerStandby)
	}()
	failures := int32(0) // sessions in a row that ended on an error
	for {
		if leader == nil {
			r.logm.state(readerStandby)
			var ok bool
			var err error
			leader, ok, err = r.logStore.TryLead(ctx, r.opts.Log.Slot, r.opts.Log.StandbyRetry)
			if err != nil {
				r.log.Warn("log relay: cannot take the slot's reader lock", "slot", r.opts.Log.Slot, "error", err)
			}
			if !ok {
				if err == nil {
					// Another replica reads the slot: this one's failed
					// sessions and held topics say nothing of the stream.
					failures = 0
					r.logFault.Store(nil)
					r.blocks.clear()
				}
				if !r.logPause(ctx, r.opts.Log.StandbyRetry) {
					return
				}
				continue
			}
			r.log.Info("log relay: reading the slot", "slot", r.opts.Log.Slot)
		}
		r.logm.state(readerActive)
		wait, err := r.logSession(ctx, leader)
		switch {
		case err == nil:
			failures = 0
			r.logFault.Store(nil)
		case logread.InUse(err):
			r.log.Info("log relay: the slot is still streamed by a previous reader; retrying", "slot", r.opts.Log.Slot)
		default:
			if r.logFault.Load() == nil { // the session had confirmed: not in a row
				failures = 0
			}
			wait = max(wait, holdPolicy(r.backoff).Delay(failures))
			failures++
			msg := fmt.Sprintf("%s (%d sessions in a row)", err, failures)
			r.logFault.Store(&msg)
			r.log.Error("log relay: session ended", "slot", r.opts.Log.Slot, "error", err, "error_reason", errclass.Of(err),
				"failures", failures, "retry_in_ms", wait.Milliseconds())
			r.logLag(ctx) // the slot retains more while sessions fail
		}
		if r.stopping() {
			return
		}
		if aerr := leader.Alive(); aerr != nil {
			leader.Release()
			leader = nil
		}
		if !r.logPause(ctx, max(wait, 10*time.Millisecond)) {
			return
		}
	}
}

// logCheck is the readiness check "log_stream": it fails while the
// reader's sessions end on errors (the slot or publication cannot be
// read or created, a missing REPLICATION attribute...). Holds of the
// environment are reported by "publish_blocked" and "subscriptions".
func (r *Relay) logCheck(context.Context) error {
	if msg := r.logFault.Load(); msg != nil {
		return fmt.Errorf("the log stream is held: %s", *msg)
	}
	return nil
}

// stopping reports whether the relay drains.
func (r *Relay) stopping() bool {
	select {
	case <-r.stopClaiming:
		return true
	default:
		return false
	}
}

// logPause waits d, ticking liveness; false when the relay stops.
func (r *Relay) logPause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(logReadWait)
	defer tick.Stop()
	for {
		r.live.Tick(loopName)
		select {
		case <-t.C:
			return true
		case <-tick.C:
		case <-r.stopClaiming:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// logSession reads the slot until the drain, a hold or an error, and
// returns how long to wait before the next session. A missing or lost
// slot is created again, after republishing the rows not known to be
// published.
func (r *Relay) logSession(ctx context.Context, leader *logread.Leader) (time.Duration, error) {
	o := r.opts.Log
	retry := r.opts.BaseBackoff
	if err := r.logStore.EnsurePublication(ctx, o.Publication); err != nil {
		return retry, err
	}
	state, from, err := r.logStore.Slot(ctx, o.Slot)
	if err != nil {
		return retry, err
	}
	held, err := r.logStore.HeldKeys(ctx)
	if err != nil {
		return retry, err
	}
	stream, err := logread.Dial(ctx, r.replConfig, r.opts.Schema, o.Slot)
	if err != nil {
		return retry, err
	}
	defer stream.Close()

	var pending *logread.Probe // a horizon waiting for the slot to be confirmed past it
	var recovery *logread.Txn
	wm := logread.NewWatermark(from)
	var pipe *logPipe
	if state != logread.SlotReady {
		switch state {
		case logread.SlotLost:
			r.log.Warn("log relay: the slot was invalidated (its WAL is gone); republishing the rows not known to be published", "slot", o.Slot)
		case logread.SlotUnrecovered:
			r.log.Warn("log relay: the slot's recovery never finished (its reader died or was held); republishing the rows not known to be published", "slot", o.Slot)
		}
		// An unrecovered slot stands (its stream holds every change after
		// its creation): the recovery reads again in a snapshot of now.
		created := logread.Created{At: from}
		if state != logread.SlotUnrecovered {
			if err := r.logStore.BeginRecovery(ctx, o.Slot); err != nil {
				return retry, err
			}
			if created, err = stream.Create(ctx); err != nil {
				return retry, err
			}
			r.logm.NewSlots.Inc()
		}
		wm = logread.NewWatermark(created.At)
		pipe = newLogPipe(r, r.logStore, wm, held)
		defer r.endOnLostLock(leader, pipe, retry)()
		recovery = wm.Begin(time.Now())
		n := 0
		xmin, err := r.logStore.Unpublished(ctx, o.Slot, created.Snapshot, recoveryPage, func(events []claim.Event) error {
			for i := range events {
				if pipe.ended() {
					return errRecoveryCut
				}
				pipe.submit(r.work, recovery, &events[i])
			}
			n += len(events)
			return nil
		})
		if err != nil || pipe.ended() {
			// The recovery transaction stays open, so never settles: the
			// horizon is not recorded, and the next session finds the slot
			// unrecovered and republishes again.
			if !errors.Is(err, errRecoveryCut) && err != nil {
				pipe.end(retry, err.Error())
			}
			pipe.close()
			if pipe.onHold {
				return pipe.retryIn, nil
			}
			return max(pipe.retryIn, retry), errors.Join(err, errors.New(pipe.why))
		}
		pipe.flush(r.work)
		wm.Commit(recovery, created.At)
		r.logm.Recovered.Add(float64(n))
		r.log.Info("log relay: republished the rows not known to be published", "slot", o.Slot, "rows", n, "at", created.At.String(),
			"slot_created", state != logread.SlotUnrecovered)
		pending = &logread.Probe{Xmin: xmin, At: created.At}
	} else {
		pipe = newLogPipe(r, r.logStore, wm, held)
		defer r.endOnLostLock(leader, pipe, retry)()
	}
	if err := stream.Start(ctx, o.Publication); err != nil {
		pipe.end(retry, err.Error())
		pipe.close()
		return o.StandbyRetry, err
	}
	err = r.logRead(ctx, stream, pipe, &pending, recovery)
	pipe.close()
	if err == nil && pipe.why != "" && pipe.why != "stopped" && !pipe.onHold {
		err = errors.New(pipe.why)
	}
	// Confirm what the session finished (Stop drains before this).
	cctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if cerr := r.logConfirm(cctx, stream, wm, &pending, recovery); cerr != nil {
		r.log.Warn("log relay: confirming the slot at the session's end (the next session reads from the last confirmed position)", "slot", o.Slot, "error", cerr)
	}
	if err != nil {
		return max(pipe.retryIn, retry), err
	}
	return pipe.retryIn, nil
}

// endOnLostLock ends pipe's session as soon as leader's lock is lost
// (its connection ended while the stream's lives on, or during a
// recovery, which holds no stream): another relay may take the lock and
// the slot then. The replica is no longer the reader from that moment,
// while its session winds down. The returned func stops the watch.
func (r *Relay) endOnLostLock(leader *logread.Leader, pipe *logPipe, retry time.Duration) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-leader.Lost():
			r.logm.state(readerStandby)
			pipe.end(retry, "the slot's reader lock is lost (its connection ended)")
		case <-pipe.stop:
		case <-done:
		}
	}()
	return func() { close(done) }
}

// logRead hands the stream's events to the pipe until the session ends.
func (r *Relay) logRead(ctx context.Context, stream *logread.Stream, pipe *logPipe, pending **logread.Probe, recovery *logread.Txn) error {
	var txn *logread.Txn
	lastConfirm, lastLag := time.Now(), time.Time{}
	for {
		r.live.Tick(loopName)
		select {
		case <-pipe.stop:
			return nil
		case <-r.stopClaiming:
			pipe.end(0, "stopped")
			return nil
		case <-ctx.Done():
			pipe.end(0, "stopped")
			return nil
		default:
		}
		if time.Since(lastConfirm) >= r.opts.Log.ConfirmInterval {
			lastConfirm = time.Now()
			if err := r.logConfirm(ctx, stream, pipe.wm, pending, recovery); err != nil {
				pipe.end(r.opts.BaseBackoff, err.Error())
				return err
			}
			if time.Since(lastLag) >= r.opts.StatsInterval {
				lastLag = time.Now()
				r.logLag(ctx)
			}
		}
		wait := logReadWait
		if ok, due := pipe.buffered(); ok {
			if wait = min(pipe.idle(), time.Until(due)); wait < time.Millisecond {
				pipe.flush(r.work) // a steady stream: its events do not wait for more
				wait = logReadWait
			}
		}
		it, err := stream.Next(ctx, wait)
		if err != nil {
			pipe.end(r.opts.BaseBackoff, err.Error())
			return err
		}
		switch it.Kind {
		case logread.None:
			pipe.flush(r.work) // nothing more to read now: publish what was read
		case logread.Begin:
			txn = pipe.wm.Begin(it.Commit)
			pipe.begin(it.Commit)
		case logread.Insert:
			if txn == nil {
				return fmt.Errorf("slot %s: an insert outside a transaction", stream.Slot)
			}
			e := it.Event
			pipe.submit(r.work, txn, &e)
		case logread.Update:
			if txn == nil {
				return fmt.Errorf("slot %s: an update outside a transaction", stream.Slot)
			}
			if err := pipe.changed(r.work, txn, it); err != nil {
				pipe.end(r.opts.BaseBackoff, err.Error())
				return err
			}
		case logread.Commit:
			if txn != nil {
				pipe.wm.Commit(txn, it.LSN)
			}
			txn = nil
		case logread.Keepalive:
			if txn == nil {
				pipe.wm.Idle(it.LSN)
			}
			if it.ReplyRequested {
				lastConfirm = time.Time{}
			}
		}
	}
}

// logConfirm confirms the slot up to the watermark and, once the slot is
// past the pending probe's position, records its horizon as published
// (recovery: the recovery transaction must be settled first) and takes
// the next probe.
func (r *Relay) logConfirm(ctx context.Context, stream *logread.Stream, wm *logread.Watermark, pending **logread.Probe, recovery *logread.Txn) error {
	at := wm.Confirmed()
	if old := wm.Oldest(); old.IsZero() {
		r.logm.LagSeconds.Set(0)
	} else {
		r.logm.LagSeconds.Set(time.Since(old).Seconds())
	}
	if err := stream.Confirm(ctx, at); err != nil {
		return err
	}
	r.logFault.Store(nil) // the stream works
	if p := *pending; p != nil && at >= p.At && (recovery == nil || wm.Settled(recovery)) {
		if err := r.logStore.SavePublished(ctx, r.opts.Log.Slot, p.Xmin, at); err != nil {
			return err
		}
		*pending = nil
	}
	if *pending == nil {
		p, err := r.logStore.Probe(ctx)
		if err != nil {
			return err
		}
		*pending = &p
	}
	return nil
}

// logLag reads the slot's lag and the WAL cap into the gauges.
func (r *Relay) logLag(ctx context.Context) {
	if lag, keep, err := r.logStore.Lag(ctx, r.opts.Log.Slot); err == nil {
		r.logm.LagBytes.Set(float64(lag))
		r.logm.KeepBytes.Set(float64(keep))
	}
}
