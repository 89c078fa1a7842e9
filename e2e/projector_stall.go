package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// ProjectorStall is what was seen around a projector SIGKILL mid-burst.
type ProjectorStall struct {
	// StallAfter is the projector's stall time (PROJECTOR_STALL_AFTER).
	StallAfter time.Duration
	// Longest is, per consumer, the longest time the running, ready
	// projector applied nothing while published events waited for it.
	Longest map[string]time.Duration
	// Detected is the first stall report: the readiness check
	// "stall/<projection>" or projector_stalled = 1 ("" when none).
	Detected string
	// Cleared: at the end the readiness names no stall and
	// projector_stalled is 0 for every projection.
	Cleared bool
}

// Undetected reports a stall of StallAfter (plus the sampling period
// and the detector's own tick) that nothing reported.
func (r ProjectorStall) Undetected() bool {
	for _, d := range r.Longest {
		if d >= r.StallAfter+stallSlack && r.Detected == "" {
			return true
		}
	}
	return false
}

// stallSlack is how late a stall can be seen: the sampling period of
// WatchProjectorStall plus the projector's detector tick.
const stallSlack = 3 * time.Second

// KillProjectorWatchStall SIGKILLs the projector mid-burst (KillProjector)
// and watches it from then on: every second, per consumer, whether it
// applies while published events wait for it, and what the projector says
// of it (readiness "stall/<projection>", gauge projector_stalled). A
// projection that applies nothing for the stall time while the restarted
// projector is ready must be reported; the report must be gone once it
// applies again.
func (s *Stack) KillProjectorWatchStall(ctx context.Context, restartAfter, stallAfter, window time.Duration, log *FaultLog) (ProjectorStall, error) {
	res := ProjectorStall{StallAfter: stallAfter, Longest: map[string]time.Duration{}}
	var mu sync.Mutex
	var readyAt time.Time // zero while the projector is down or not yet ready
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lastApplied := map[string]int64{}
		since := map[string]time.Time{} // start of the current period without progress
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			ready := readyAt
			mu.Unlock()
			snap, err := s.Stats.Snapshot(wctx)
			if err != nil {
				continue
			}
			now := time.Now()
			for _, c := range s.Cfg.Consumers {
				n, err := s.Stats.PublishedUnapplied(wctx, c)
				if err != nil {
					continue
				}
				if snap.Applied[c] != lastApplied[c] || n == 0 || since[c].IsZero() {
					lastApplied[c], since[c] = snap.Applied[c], now
					continue
				}
				if ready.IsZero() {
					continue
				}
				from := since[c]
				if from.Before(ready) {
					from = ready // the detector runs only in a running projector
				}
				mu.Lock()
				res.Longest[c] = max(res.Longest[c], now.Sub(from))
				mu.Unlock()
			}
			if ready.IsZero() {
				continue
			}
			if what := s.stallReport(wctx); what != "" {
				mu.Lock()
				if res.Detected == "" {
					res.Detected = what
					s.Sup.Logf("fault: projector stall reported: %s", what)
				}
				mu.Unlock()
			}
		}
	}()
	err := s.KillProjector(ctx, restartAfter, log)
	mu.Lock()
	readyAt = time.Now()
	mu.Unlock()
	if err == nil {
		err = sleepCtx(ctx, window)
	}
	stop()
	<-done
	if err != nil {
		return res, err
	}
	// A stall still reported clears once the projection applies again.
	_ = poll(ctx, time.Second, 2*time.Minute, func() (bool, string) {
		what := s.stallReport(ctx)
		return what == "", what
	})
	res.Cleared = s.stallReport(ctx) == ""
	s.Sup.Logf("fault: projector after SIGKILL: longest time applying nothing with a backlog %v (stall after %s); reported: %q; cleared: %t",
		res.Longest, stallAfter, res.Detected, res.Cleared)
	return res, nil
}

// stallReport is what the projector says of a stall now: its readiness
// answer when that names "stall/", or the projections whose
// projector_stalled is 1 ("" when neither).
func (s *Stack) stallReport(ctx context.Context) string {
	p := s.Projector
	if ready := p.readiness(ctx); strings.Contains(ready, "stall/") {
		return "readiness: " + ready
	}
	s.Scraper.ScrapeAll(ctx)
	if n := s.Scraper.Last(p.Name(), "projector_stalled"); n > 0 {
		return fmt.Sprintf("projector_stalled = 1 for %.0f projection(s)", n)
	}
	return ""
}
