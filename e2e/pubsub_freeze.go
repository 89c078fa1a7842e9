package e2e

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// FrozenStop is how the projector stopped while Pub/Sub did not answer.
type FrozenStop struct {
	// Inflight is how many messages the projector held when Pub/Sub froze.
	Inflight float64
	// Took is from SIGTERM to exit; Timeout the projector's
	// PROJECTOR_SHUTDOWN_TIMEOUT it must stay within.
	Took, Timeout time.Duration
	// Exit is the exit status ("exit 0" when clean).
	Exit string
	// Clean: it exited 0 within Timeout plus frozenStopSlack.
	Clean bool
	// HeldBack counts published events the emulator still held back a
	// minute after the thaw (ordered keys pinned to the stopped
	// projector's streams).
	HeldBack int
}

// frozenStopSlack is what the process may take beyond its shutdown
// timeout: flushing the log, closing the pools, a SIGTERM arriving on a
// loaded machine.
const frozenStopSlack = 3 * time.Second

// Freeze stops Pub/Sub from answering: every process of the server is
// frozen (SIGSTOP), its sockets stay open, requests hang. Thaw resumes it.
func (ps *PubSub) Freeze() error { return ps.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen Pub/Sub (SIGCONT).
func (ps *PubSub) Thaw() error { return ps.signal(syscall.SIGCONT) }

func (ps *PubSub) signal(sig syscall.Signal) error {
	if !ps.Emulator {
		return ps.Pstest.Signal(sig)
	}
	pids := ps.PIDs()
	if len(pids) == 0 {
		return fmt.Errorf("pubsub emulator: no process to signal")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("pubsub emulator pid %d: %w", pid, err)
		}
	}
	return nil
}

// StopProjectorPubSubFrozen freezes Pub/Sub while the projector holds
// messages and stops the projector gracefully (SIGTERM): its final acks
// and flushes get no answer, and it must give them up and exit 0 within
// its shutdown timeout (an abandoned ack is a redelivery the inbox
// absorbs, not a loss). Then Pub/Sub thaws, the projector starts again and
// what was published must be applied.
func (s *Stack) StopProjectorPubSubFrozen(ctx context.Context, chk *OrderChecker, timeout time.Duration, log *FaultLog) (FrozenStop, error) {
	res := FrozenStop{Timeout: timeout}
	p := s.Projector
	defer p.Hold()()
	_ = poll(ctx, 50*time.Millisecond, 10*time.Second, func() (bool, string) {
		s.Scraper.ScrapeAll(ctx)
		res.Inflight = s.Scraper.Last(p.Name(), "projector_inflight")
		return res.Inflight > 0, ""
	})
	if err := s.PubSub.Freeze(); err != nil {
		return res, err
	}
	s.Sup.Logf("fault: Pub/Sub frozen (SIGSTOP) with the projector holding %.0f message(s); SIGTERM %s, which must exit 0 within %s", res.Inflight, p.Name(), timeout)
	start := time.Now()
	err := p.Stop()
	res.Took = time.Since(start)
	res.Exit = exitText(err)
	res.Clean = err == nil && res.Took <= timeout+frozenStopSlack
	log.GracefulRestarts.Add(1)
	if !res.Clean {
		log.unclean(fmt.Sprintf("%s with Pub/Sub frozen: %s after %s", p.Name(), res.Exit, res.Took.Round(time.Millisecond)))
	}
	s.Sup.Logf("fault: %s stopped %s after SIGTERM with Pub/Sub frozen (%s); thawing Pub/Sub", p.Name(), res.Took.Round(time.Millisecond), res.Exit)
	if err := s.PubSub.Thaw(); err != nil {
		return res, err
	}
	if err := p.Start(); err != nil {
		return res, err
	}
	if err := p.WaitReady(ctx, time.Minute); err != nil {
		return res, err
	}
	// The emulator does not learn that the stopped projector's streams are
	// gone (see RestartPubSub) and can keep their ordered keys pinned to
	// them, later messages of those keys (a re-drive too) behind them; Cloud
	// Pub/Sub redelivers after the ack deadline. What it still holds after
	// a minute is counted; the suite's Pub/Sub restart re-drives it.
	if err := s.WaitDrained(ctx, chk, 2*time.Second, time.Minute); err != nil {
		ids, err := s.publishedUnappliedIDs(ctx)
		if err != nil {
			return res, err
		}
		s.Sup.Logf("fault: Pub/Sub thawed: the emulator still holds back %d published event(s) a minute later", len(ids))
		res.HeldBack = len(ids)
	}
	return res, nil
}
