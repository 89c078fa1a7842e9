package e2e

import (
	"context"
	"encoding/json"
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
	// projector applied nothing while published events waited for it;
	// LongestHeld the longest part of such a time in which the projection
	// held received messages (projector_inflight > 0): what its stall
	// detector reports. A projection that receives nothing (ordered keys
	// held on a dead stream until their ack deadline) holds none: relayctl
	// status reports that case.
	Longest, LongestHeld map[string]time.Duration
	// Detected is the first stall report: the readiness check
	// "stall/<projection>" or projector_stalled = 1 ("" when none).
	Detected string
	// Cleared: at the end the readiness names no stall and
	// projector_stalled is 0 for every projection.
	Cleared bool
	// Down is how long the projector was dead. While it was, `relayctl
	// status --oldest-slo StatusSLO` named the consumers in Named (the
	// first problem it said, Said, DetectedAfter the kill); StatusCleared:
	// after the restart it named none of them any more.
	Down, DetectedAfter, StatusSLO time.Duration
	Named                          []string
	Said                           string
	StatusCleared                  bool
	// Written counts the writes made while the projector was dead.
	Written int
}

// Undetected reports a projection that held messages and applied nothing
// for StallAfter (plus the sampling period and the detector's own tick)
// without a stall report.
func (r ProjectorStall) Undetected() bool {
	for _, d := range r.LongestHeld {
		if d >= r.StallAfter+stallSlack && r.Detected == "" {
			return true
		}
	}
	return false
}

// projectionOf names the projection of each inbox consumer
// (configs/projector.yaml).
var projectionOf = map[string]string{ConsumerPG: "videos", ConsumerES: "search"}

// stallSlack is how late a stall can be seen: the sampling period of
// WatchProjectorStall plus the projector's detector tick.
const stallSlack = 3 * time.Second

// KillProjectorWatchStall SIGKILLs the projector mid-burst, lets write
// make events for it once it has been dead longer than status's margin,
// and keeps it dead until `relayctl status --oldest-slo statusSLO` names
// every consumer as receiving nothing while events wait (at most a
// minute), then starts it again; status must stop naming them. From the kill on it also
// watches, every second, per consumer, whether it applies while published
// events wait for it, and what the restarted projector says of it
// (readiness "stall/<projection>", gauge projector_stalled): a projection
// that applies nothing for the stall time while the projector is ready
// must be reported, and the report must be gone once it applies again.
func (s *Stack) KillProjectorWatchStall(ctx context.Context, statusSLO, stallAfter, window time.Duration, write func(context.Context) int, log *FaultLog) (ProjectorStall, error) {
	res := ProjectorStall{StallAfter: stallAfter, StatusSLO: statusSLO, Longest: map[string]time.Duration{}, LongestHeld: map[string]time.Duration{}}
	var mu sync.Mutex
	var readyAt time.Time // zero while the projector is down or not yet ready
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lastApplied := map[string]int64{}
		since := map[string]time.Time{}     // start of the current period without progress
		heldSince := map[string]time.Time{} // ... in which the projection holds messages
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
			s.Scraper.ScrapeAll(wctx)
			for _, c := range s.Cfg.Consumers {
				n, err := s.Stats.PublishedUnapplied(wctx, c)
				if err != nil {
					continue
				}
				if snap.Applied[c] != lastApplied[c] || n == 0 || since[c].IsZero() {
					lastApplied[c], since[c], heldSince[c] = snap.Applied[c], now, time.Time{}
					continue
				}
				if ready.IsZero() {
					continue
				}
				from := since[c]
				if from.Before(ready) {
					from = ready // the detector runs only in a running projector
				}
				held := s.Scraper.Last(s.Projector.Name(), "projector_inflight", "projection="+projectionOf[c]) > 0
				switch {
				case !held:
					heldSince[c] = time.Time{}
				case heldSince[c].IsZero():
					heldSince[c] = now
				}
				mu.Lock()
				res.Longest[c] = max(res.Longest[c], now.Sub(from))
				if !heldSince[c].IsZero() {
					res.LongestHeld[c] = max(res.LongestHeld[c], now.Sub(heldSince[c]))
				}
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
	err := s.killProjectorSeenByStatus(ctx, &res, write, log, func() {
		mu.Lock()
		readyAt = time.Now()
		mu.Unlock()
	})
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
	s.Sup.Logf("fault: projector after SIGKILL: longest time applying nothing with a backlog %v, of it holding messages %v (stall after %s); reported: %q; cleared: %t",
		res.Longest, res.LongestHeld, stallAfter, res.Detected, res.Cleared)
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

// killProjectorSeenByStatus is the kill and restart of
// KillProjectorWatchStall, with relayctl status asked meanwhile.
func (s *Stack) killProjectorSeenByStatus(ctx context.Context, res *ProjectorStall, write func(context.Context) int, log *FaultLog, ready func()) error {
	p := s.Projector
	release := p.Hold()
	defer release()
	s.Scraper.ScrapeAll(ctx)
	p.Kill()
	killed := time.Now()
	log.ProjectorKills.Add(1)
	s.Sup.Logf("fault: SIGKILL %s mid-burst; kept dead until relayctl status --oldest-slo %s names its consumers", p.Name(), res.StatusSLO)
	// Events published later than status's margin after the consumers'
	// last one, whether or not the workload still runs.
	if err := sleepCtx(ctx, 11*time.Second); err != nil {
		return err
	}
	res.Written = write(ctx)
	s.Sup.Logf("fault: %d write(s) while %s is dead", res.Written, p.Name())
	err := poll(ctx, 2*time.Second, time.Minute, func() (bool, string) {
		named, said, err := s.consumersBehind(ctx, res.StatusSLO)
		if err != nil {
			return false, err.Error()
		}
		if len(named) == len(s.Cfg.Consumers) {
			res.Named, res.Said, res.DetectedAfter = named, said, time.Since(killed)
			return true, ""
		}
		return false, fmt.Sprintf("relayctl status names %v", named)
	})
	if err != nil {
		s.Sup.Logf("fault: relayctl status did not name every consumer of the dead projector: %v", err)
	}
	res.Down = time.Since(killed)
	if err := p.Start(); err != nil {
		return err
	}
	if err := p.WaitReady(context.WithoutCancel(ctx), time.Minute); err != nil {
		return err
	}
	ready()
	s.Sup.Logf("fault: %s back after %s dead; relayctl status named %v after %s", p.Name(), res.Down.Round(time.Second), res.Named, res.DetectedAfter.Round(time.Second))
	err = poll(ctx, 2*time.Second, 2*time.Minute, func() (bool, string) {
		named, _, err := s.consumersBehind(ctx, res.StatusSLO)
		return err == nil && len(named) == 0, fmt.Sprintf("relayctl status still names %v (err %v)", named, err)
	})
	res.StatusCleared = err == nil
	return nil
}

// consumersBehind are the consumers `relayctl status --oldest-slo slo`
// names as receiving nothing while events wait, and its first such
// problem.
func (s *Stack) consumersBehind(ctx context.Context, slo time.Duration) (named []string, said string, err error) {
	out, _, err := s.RelayctlCode(ctx, "status", "--oldest-slo", slo.String(), "--json")
	if err != nil {
		return nil, "", err
	}
	var rep struct {
		Behind []struct {
			Consumer string `json:"consumer"`
		} `json:"consumers_behind"`
		Problems []string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return nil, "", fmt.Errorf("relayctl status --json: %w", err)
	}
	for _, b := range rep.Behind {
		named = append(named, b.Consumer)
	}
	for _, p := range rep.Problems {
		if strings.HasPrefix(p, "consumer ") {
			said = p
			break
		}
	}
	return named, said, nil
}
