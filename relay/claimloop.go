package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/wakeup"
)

// claimErrorLogEvery throttles the log of failing claims (Postgres down):
// one line per interval, with the count.
const claimErrorLogEvery = 10 * time.Second

// writeTimeout bounds each outcome write; writes use a context detached
// from shutdown so a drain still records what was published.
const writeTimeout = 10 * time.Second

// run claims and publishes until drain finishes (or ctx ends, which
// abandons in-flight work like an expired grace period). It returns nil
// after a drain.
func (r *Relay) run(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return errors.New("relay: Run or Start called twice")
	}
	r.started = true
	r.mu.Unlock()
	defer close(r.done)

	stopAbandon := context.AfterFunc(ctx, r.abandon)
	defer stopAbandon()

	r.stall.published(time.Now()) // the stall window starts now
	if r.opts.Mode == ModeLog {
		r.runLog(ctx)
		return nil
	}
	// Acquire this replica's partitions before the first claim.
	r.own.Join(ctx)
	bg, stopBG := context.WithCancel(ctx)
	var bgWG sync.WaitGroup
	for _, loop := range []func(context.Context){
		func(ctx context.Context) { r.wakeup.Listen(ctx, r.notified) },
		func(ctx context.Context) { r.own.Run(ctx, r.signal) },
		r.reclaimLoop,
		r.statsLoop,
		r.retentionLoop,
		r.subs.run,
	} {
		bgWG.Add(1)
		go func() {
			defer bgWG.Done()
			loop(bg)
		}()
	}

	r.claimLoop(ctx)
	r.workers.Wait()
	stopBG()
	bgWG.Wait()
	r.leave()
	r.log.Info("outbox relay stopped")
	return nil
}

// drain stops claiming and waits for in-flight batches to publish and
// record their outcomes. When ctx ends first, workers stop waiting for
// publish results, record what they know and release the rest at once;
// drain then returns ctx's error.
func (r *Relay) drain(ctx context.Context) error {
	r.stopOnce.Do(func() { close(r.stopClaiming) })
	r.mu.Lock()
	started := r.started
	r.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		r.log.Warn("grace period over: abandoning in-flight publishes and releasing their rows")
		r.abandon()
		<-r.done
		return fmt.Errorf("draining outbox relay: %w", ctx.Err())
	}
}

// signal wakes the claim loop (non-blocking, coalesced).
func (r *Relay) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Relay) claimLoop(ctx context.Context) {
	slots := make(chan struct{}, r.opts.Concurrency)
	poll := time.NewTicker(r.opts.PollInterval)
	defer poll.Stop()
	cooldown := r.opts.fetchCooldown()
	var bell *doorbell // nil: no cooldown, claim on every wake-up (writers always notify)
	if cooldown > 0 {
		bell = newDoorbell(r.wakeup, r.opts.WorkerID, r.opts.PollInterval, cooldown, r.m, r.log)
		defer bell.leave()
	}
	again := time.NewTimer(time.Hour) // the relay's own next claim (bell.claimsAlone)
	again.Stop()
	defer again.Stop()
	now := true // claim at once at start and after a full batch
	var lastClaim, lastErrLog time.Time
	failedClaims := 0
	for {
		r.live.Tick(loopName)
		if !now {
			select {
			case <-r.stopClaiming:
				return
			case <-ctx.Done():
				return
			case <-r.wake:
				if bell != nil && bell.isArmed() {
					// A NOTIFY woke the idle relay: stop the writers' NOTIFYs
					// now, not after the cooldown and the claim (every one
					// until then takes the commit lock). The claim below
					// follows in any case.
					bell.set(ctx, false)
				}
			case <-again.C:
				if bell != nil && !bell.look(ctx) { // an unannounced writer is still in flight
					again.Reset(bell.retryIn())
					continue
				}
			case <-poll.C:
				// The poll is the fallback for missed notifications and for
				// retries coming due: a claim less than a poll interval ago
				// covered it (an empty claim scans every blocked row, so
				// skip it).
				if time.Since(lastClaim) < r.opts.PollInterval {
					continue
				}
			}
			if !r.coolDown(ctx, lastClaim.Add(cooldown)) {
				return
			}
		}
		now = false
		if !r.storeWait(ctx) {
			return
		}
		if !r.acquire(ctx, slots, poll) {
			return
		}
		again.Stop() // this claim is the one it would have started
		lastClaim = time.Now()
		batch, err := r.claim(ctx)
		if bell != nil {
			bell.claimed(err)
		}
		if err != nil {
			<-slots
			r.m.StoreErrors.WithLabelValues("claim").Inc()
			r.refused(stmtClaim, err)
			failedClaims++
			if time.Since(lastErrLog) >= claimErrorLogEvery {
				r.log.Error("claiming outbox rows", "error", err, "error_reason", errclass.Of(err), "failed_claims", failedClaims)
				lastErrLog, failedClaims = time.Now(), 0
			}
			if bell != nil && bell.claimsAlone() { // writers rely on this relay's own claims
				again.Reset(time.Until(lastClaim.Add(bell.retryIn())))
			}
			continue // next poll tick or wake-up
		}
		r.accepted(stmtClaim)
		if len(batch.Events) == 0 {
			<-slots
			r.m.EmptyClaims.Inc()
			if bell != nil {
				bell.set(ctx, true)
				// Just armed, the relay claims once more when the writers
				// that read it busy have ended (they commit without a
				// NOTIFY).
				if bell.claimsAlone() {
					again.Reset(time.Until(lastClaim.Add(bell.retryIn())))
				}
			}
			continue
		}
		select {
		case <-r.stopClaiming: // claimed but not started: hand back at once
			r.release(batch.Token, batch.IDs(), "shutdown before start")
			<-slots
			return
		default:
		}
		r.workers.Add(1)
		go func() {
			defer r.workers.Done()
			defer func() { <-slots }()
			r.process(batch)
			r.signal() // rows behind this batch's keys may be claimable now
		}()
		if bell != nil { // after the hand-off: the batch does not wait for this write
			bell.set(ctx, false)
			again.Reset(time.Until(lastClaim.Add(cooldown))) // busy: claim again without a NOTIFY
		}
		now = len(batch.Events) == r.opts.BulkSize
	}
}

// coolDown waits until the fetch cooldown since the last claim is over
// (at once after an idle period) and drops the wake-ups that arrived
// meanwhile: the claim that follows covers them. It reports false when
// the relay stops.
func (r *Relay) coolDown(ctx context.Context, until time.Time) bool {
	if wait := time.Until(until); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-r.stopClaiming:
			return false
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	select {
	case <-r.wake:
	default:
	}
	return true
}

// acquire waits for a worker slot, ticking liveness while all are busy.
func (r *Relay) acquire(ctx context.Context, slots chan struct{}, poll *time.Ticker) bool {
	for {
		select {
		case slots <- struct{}{}:
			return true
		case <-r.stopClaiming:
			return false
		case <-ctx.Done():
			return false
		case <-poll.C:
			r.live.Tick(loopName)
		}
	}
}

func (r *Relay) claim(ctx context.Context) (claim.Batch, error) {
	token, err := uuid.NewRandom()
	if err != nil {
		return claim.Batch{}, fmt.Errorf("generating lock token: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.Lease)
	defer cancel()
	parts := r.own.Partitions()
	if len(parts) == 0 {
		return claim.Batch{Token: token}, nil // owns no partition (yet)
	}
	start := time.Now()
	events, err := r.claims.Claim(cctx, claim.Request{
		Worker: r.opts.WorkerID, Token: token, Limit: r.opts.BulkSize, Lease: r.opts.Lease, Partitions: parts,
	})
	r.m.ClaimDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		return claim.Batch{}, err
	}
	if len(events) > 0 {
		r.m.ClaimBatchSize.Observe(float64(len(events)))
	}
	return claim.Batch{Token: token, Events: events}, nil
}

// notified handles a NOTIFY: another relay's partition change makes the
// heartbeat run now (it signals the claim loop when it acquires); anything
// else (writers, relayctl) wakes the claim loop.
func (r *Relay) notified(payload string) {
	if payload == wakeup.PartitionsChanged {
		r.own.Nudge()
		return
	}
	r.signal()
}

// announcePartitions tells the other relays to beat now.
func (r *Relay) announcePartitions() {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.wakeup.AnnouncePartitions(ctx); err != nil {
		r.log.Warn("announcing a partition change (the others move at their next heartbeat)", "error", err)
	}
}

// leave hands the partitions over at the end of Run (drained, or ctx
// ended), with a detached context.
func (r *Relay) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.own.Leave(ctx); err != nil {
		r.log.Error("outbox partitions return after their lease", "error", err)
	}
}

// release hands rows back to pending with a detached context.
func (r *Relay) release(token uuid.UUID, ids []int64, why string) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	n, err := r.claims.Release(ctx, token, ids)
	if err != nil {
		r.m.StoreErrors.WithLabelValues("release").Inc()
		r.log.Error("releasing claimed rows (they return after the lease)", "rows", len(ids), "why", why, "error", err)
		return
	}
	r.m.Released.Add(float64(n))
	r.m.Fenced.Add(float64(int64(len(ids)) - n))
	r.log.Info("released claimed rows", "rows", n, "why", why)
}
