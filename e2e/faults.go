package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FaultLog counts what the harness did to the system.
type FaultLog struct {
	PublisherKills   atomic.Int64
	PublisherPauses  atomic.Int64
	GracefulRestarts atomic.Int64
	PubSubRestarts   atomic.Int64
	PostgresRestarts atomic.Int64
	ESFaults         atomic.Int64
	// Crashes are exits nobody asked for; the watchdog restarted them.
	Crashes atomic.Int64
	// ProjectorCrashes are the projector's share of Crashes.
	ProjectorCrashes atomic.Int64
	ProjectorKills   atomic.Int64
	// HeldBack counts published events the emulator still held back when
	// it was restarted (see RestartPubSub); they were re-driven from the
	// outbox.
	HeldBack atomic.Int64
	// SettleRestarts counts the Pub/Sub restarts a drain needed because
	// the emulator held events back (see HeldBackByEmulator); they are in
	// PubSubRestarts too.
	SettleRestarts atomic.Int64

	mu sync.Mutex
	// Unclean lists graceful stops (SIGTERM) that did not exit 0 in time.
	Unclean []string
}

func (l *FaultLog) unclean(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Unclean = append(l.Unclean, what)
}

// UncleanStops returns the graceful stops that did not exit 0.
func (l *FaultLog) UncleanStops() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.Unclean...)
}

// esControl posts a fault-injection request to the Elasticsearch test
// server's control address (which stays up during an outage).
func (s *Stack) esControl(ctx context.Context, path string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ESControl+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("es-testserver %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("es-testserver %s: %s", path, resp.Status)
	}
	return nil
}

// ESFault makes every Elasticsearch API request answer status for d.
func (s *Stack) ESFault(ctx context.Context, status int, d time.Duration) error {
	return s.esControl(ctx, "/_estest/fault", map[string]any{"status": status, "seconds": int(d.Seconds())})
}

// ESDown closes the Elasticsearch listener for d.
func (s *Stack) ESDown(ctx context.Context, d time.Duration) error {
	return s.esControl(ctx, "/_estest/down", map[string]any{"seconds": int(d.Seconds())})
}

// ESItemFault makes the next times writes of document id fail with status.
func (s *Stack) ESItemFault(ctx context.Context, id string, status, times int) error {
	return s.esControl(ctx, "/_estest/item-fault", map[string]any{"id": id, "status": status, "times": times})
}

// RestartPostgres stops Postgres (fast shutdown: sessions are cut), keeps
// it down for down, and starts it again.
func (s *Stack) RestartPostgres(ctx context.Context, down time.Duration) error {
	if err := s.PG.Stop(ctx); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	return s.PG.Start(ctx)
}

// KillPublishers SIGKILLs a random publisher every interval and starts it
// again after restartAfter, until ctx ends.
func (s *Stack) KillPublishers(ctx context.Context, interval, restartAfter time.Duration, log *FaultLog) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p := s.Publishers[rand.IntN(len(s.Publishers))]
		if !p.Running() {
			continue
		}
		release := p.Hold()
		s.Scraper.ScrapeAll(ctx)
		p.Kill()
		log.PublisherKills.Add(1)
		s.Sup.Logf("fault: SIGKILL %s", p.Name())
		time.Sleep(restartAfter)
		err := p.Start()
		if err == nil {
			err = p.WaitReady(context.WithoutCancel(ctx), time.Minute)
		}
		release()
		if err != nil {
			return err
		}
	}
}

// KillProjector SIGKILLs the projector (mid-burst: the workload runs) and
// starts it again after restartAfter; it must become ready and stay up
// (the watchdog counts an exit nobody asked for as a crash).
func (s *Stack) KillProjector(ctx context.Context, restartAfter time.Duration, log *FaultLog) error {
	p := s.Projector
	release := p.Hold()
	defer release()
	s.Scraper.ScrapeAll(ctx)
	p.Kill()
	log.ProjectorKills.Add(1)
	s.Sup.Logf("fault: SIGKILL %s mid-burst", p.Name())
	if err := sleepCtx(ctx, restartAfter); err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	return p.WaitReady(context.WithoutCancel(ctx), time.Minute)
}

// PausePublisher freezes a publisher (SIGSTOP) while it holds claimed rows
// and keeps it frozen for d, longer than its lease, so another replica
// takes its claims over; when it thaws, its late writes must be fenced off
// by the lock token. It returns how many rows the frozen process held.
//
// Its metrics only say it was busy a moment before the signal; a batch is
// one Publish request and may finish in between. So after SIGSTOP the
// outbox is asked: holding nothing, it is thawed and frozen again later.
func (s *Stack) PausePublisher(ctx context.Context, p *Proc, d time.Duration, log *FaultLog) (int, error) {
	held := 0
	for try := 0; held == 0; try++ {
		if try == 50 {
			return 0, fmt.Errorf("froze %s 50 times and it never held a claimed row", p.Name())
		}
		_ = poll(ctx, 50*time.Millisecond, 5*time.Second, func() (bool, string) {
			s.Scraper.ScrapeAll(ctx)
			return s.Scraper.Last(p.Name(), "outbox_inflight_events") > 0, ""
		})
		if err := p.Pause(); err != nil {
			return 0, err
		}
		n, err := s.Stats.HeldBy(ctx, p.Name())
		if err != nil {
			_ = p.Resume()
			return 0, err
		}
		if held = n; held == 0 {
			if err := p.Resume(); err != nil {
				return 0, err
			}
		}
	}
	log.PublisherPauses.Add(1)
	s.Sup.Logf("fault: SIGSTOP %s for %s, holding %d claimed row(s)", p.Name(), d, held)
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return held, p.Resume()
}

// RollingRestart restarts every publisher and then the projector with
// SIGTERM, one at a time, each back to ready before the next; every
// graceful stop must exit 0.
func (s *Stack) RollingRestart(ctx context.Context, log *FaultLog) error {
	procs := append(append([]*Proc(nil), s.Publishers...), s.Projector)
	for _, p := range procs {
		if err := s.gracefulRestart(ctx, p, log); err != nil {
			return err
		}
	}
	return nil
}

func (s *Stack) gracefulRestart(ctx context.Context, p *Proc, log *FaultLog) error {
	defer p.Hold()()
	s.Sup.Logf("fault: rolling restart (SIGTERM) %s", p.Name())
	s.Scraper.ScrapeAll(ctx)
	if err := p.Stop(); err != nil {
		s.Sup.Logf("fault: %s: graceful stop: %v", p.Name(), err)
		log.unclean(fmt.Sprintf("%s: %v", p.Name(), exitText(err)))
	}
	if err := p.Start(); err != nil {
		return err
	}
	if err := p.WaitReady(ctx, time.Minute); err != nil {
		return err
	}
	log.GracefulRestarts.Add(1)
	return nil
}

// RestartPubSub takes Pub/Sub away and brings an empty one back.
//
// Neither the emulator nor pstest keeps state across a restart: topics,
// subscriptions and every message not yet delivered and acked are gone.
// Losing those is the emulator's doing, not the pipeline's, so the harness
// arranges that nothing is in flight when the server dies:
//
//  1. the publishers are stopped gracefully (SIGTERM: in-flight publishes
//     finish, unstarted claims are handed back). Rows an earlier, killed
//     or frozen, publisher left "publishing" stay so; their messages may
//     die with the server, but the rows are taken over and published again
//     once the publishers are back;
//  2. the harness waits until every published event has been applied by
//     every consumer and the audit subscription has been quiet for a
//     moment (ordered delivery holds later messages of a key back until
//     the earlier ones are acked, so "quiet" alone is not enough);
//  3. the server is stopped and the publishers are started against it:
//     for down they see Pub/Sub unavailable and back off;
//  4. they are frozen (SIGSTOP) while a new server starts and `relayctl
//     pubsub ensure` recreates the resources (a publish to a server without
//     the topic would be a deterministic topic_not_found), then thawed.
//
// Published events the old server never delivered (step 2 timed out) are
// re-driven from the outbox between steps 2 and 3, while no publisher runs.
//
// The projector and the audit checker ride the outage out on their own.
//
// drain bounds step 2; 0 skips it, for a caller that waited already (the
// suite's settle, when the emulator holds events back: HeldBackByEmulator).
func (s *Stack) RestartPubSub(ctx context.Context, chk *OrderChecker, down, drain time.Duration, log *FaultLog) error {
	for _, p := range s.Publishers {
		defer p.Hold()()
	}
	s.Scraper.ScrapeAll(ctx)
	for _, p := range s.Publishers {
		if err := p.Stop(); err != nil {
			s.Sup.Logf("fault: %s: graceful stop: %v", p.Name(), err)
			log.unclean(fmt.Sprintf("%s: %v", p.Name(), exitText(err)))
		}
		log.GracefulRestarts.Add(1)
	}
	if snap, err := s.Stats.Snapshot(ctx); err == nil && snap.Outbox.Publishing > 0 {
		// Claims of a publisher that died or lost its session before it
		// recorded the outcome (phase 2's frozen one): they expire and are
		// taken over, and published again, once the publishers are back.
		s.Sup.Logf("fault: Pub/Sub restart: %d row(s) left publishing by stopped publishers (taken over after the restart):%s",
			snap.Outbox.Publishing, s.Stats.StuckReport(ctx, nil))
	}
	s.Sup.Logf("fault: Pub/Sub restart: publishers stopped, draining")
	var heldBack []string
	drained := errNotDrained
	if drain > 0 {
		drained = s.WaitDrained(ctx, chk, 2*time.Second, drain)
	}
	if err := drained; err != nil {
		// The emulator (0.8.20) fails inside its handler when a client
		// cancels a StreamingPull (NoSuchMethodError in
		// ServerImpl.closedInternal, in its log), so it never learns that
		// the projector's old streams are gone and can keep ordered keys
		// pinned to them: those messages stay undelivered. They die with
		// the server; re-driving them from the outbox after the restart is
		// what an operator does when Pub/Sub loses messages. Counted and
		// shown in the table; anything the re-drive does not bring home
		// fails the loss check.
		if err != errNotDrained {
			s.Sup.Logf("fault: Pub/Sub restart: %v", err)
		}
		if heldBack, err = s.publishedUnappliedIDs(ctx); err != nil {
			return fmt.Errorf("draining before the Pub/Sub restart: %w", err)
		}
		s.Sup.Logf("fault: Pub/Sub restart: the emulator still holds back %d published event(s); restarting it anyway and re-driving them from the outbox", len(heldBack))
	}
	chk.Suspend() // until its subscription exists on the new server
	defer chk.Resume()
	if err := s.PubSub.Stop(ctx); err != nil {
		return err
	}
	log.PubSubRestarts.Add(1)
	if len(heldBack) > 0 {
		// Re-driven while every publisher is stopped: the rows go back to
		// pending before any later version of their keys can be claimed, so
		// the claim's id order publishes them first. Re-driven after the
		// publishers were back, later versions still pending at the restart
		// could go out first.
		for ids := range slices.Chunk(heldBack, redriveChunk) {
			if _, err := s.Relayctl(ctx, "replay", "--ids", strings.Join(ids, ","), "--include-published",
				"--by", "e2e-suite", "--why", "held back by the emulator when it was restarted"); err != nil {
				return fmt.Errorf("re-driving the events the emulator held back: %w", err)
			}
		}
		log.HeldBack.Add(int64(len(heldBack)))
	}
	for _, p := range s.Publishers {
		if err := p.Start(); err != nil {
			return err
		}
	}
	s.Sup.Logf("fault: Pub/Sub down for %s, publishers started against it", down)
	if err := sleepCtx(ctx, down); err != nil {
		return err
	}
	for _, p := range s.Publishers {
		if err := p.Pause(); err != nil {
			return err
		}
	}
	startErr := s.PubSub.Start(ctx)
	if startErr == nil {
		startErr = s.EnsurePubSub(ctx)
	}
	if startErr == nil {
		chk.Resume() // before the publishers thaw: it must see the first batch
	}
	for _, p := range s.Publishers {
		_ = p.Resume()
	}
	if startErr != nil {
		return startErr
	}
	for _, p := range s.Publishers {
		if err := p.WaitReady(ctx, time.Minute); err != nil {
			return err
		}
	}
	s.Sup.Logf("fault: Pub/Sub back (pids %v), resources ensured, publishers ready", s.PubSub.PIDs())
	return nil
}

// errNotDrained: RestartPubSub was told not to wait for the drain.
var errNotDrained = errors.New("not drained: the caller waited already")

// publishedUnappliedIDs lists the published events some consumer has not
// applied (after a failed drain: the messages Pub/Sub still holds).
// redriveChunk bounds the ids of one relayctl replay: thousands of them
// overflow the kernel's argument limit.
const redriveChunk = 500

func (s *Stack) publishedUnappliedIDs(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	for _, c := range s.Cfg.Consumers {
		rows, _, err := s.Stats.Unapplied(ctx, c, 100000)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if id := r.EventID.String(); r.Status == "published" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// WaitDrained waits until no published event is unapplied by any consumer
// and the audit checker has received nothing for quiet. Rows still
// "publishing" are not waited for: with the publishers stopped nobody
// finishes them until they are taken over after a restart, which publishes
// them again (a message of theirs that Pub/Sub loses is not lost).
func (s *Stack) WaitDrained(ctx context.Context, chk *OrderChecker, quiet, timeout time.Duration) error {
	err := poll(ctx, 250*time.Millisecond, timeout, func() (bool, string) {
		var pending int64
		var err error
		for _, c := range s.Cfg.Consumers {
			if err != nil {
				break
			}
			var n int64
			n, err = s.Stats.PublishedUnapplied(ctx, c)
			pending += n
		}
		done := err == nil && pending == 0 && time.Since(chk.LastReceive()) >= quiet
		return done, fmt.Sprintf("%d published events still unapplied (err %v)", pending, err)
	})
	if err != nil {
		return fmt.Errorf("%w; waiting for:%s", err, s.Stats.StuckReport(ctx, s.Cfg.Consumers))
	}
	return nil
}

// WaitUnapplied waits until each consumer has exactly want[consumer]
// published events it has not applied (dead letters awaiting replay).
func (s *Stack) WaitUnapplied(ctx context.Context, want map[string]int64, timeout time.Duration) error {
	err := poll(ctx, 500*time.Millisecond, timeout, func() (bool, string) {
		snap, err := s.Stats.Snapshot(ctx)
		ok := err == nil && (s.Cfg.LogMode || snap.Outbox.Lag == 0) // rows stay pending in the log mode
		got := map[string]int64{"outbox lag": snap.Outbox.Lag}
		for c, w := range want {
			n, err := s.Stats.Outstanding(ctx, c)
			got[c] = n
			if err != nil || n != w {
				ok = false
			}
		}
		return ok, fmt.Sprintf("published but unapplied events %v, want %v", got, want)
	})
	if err != nil {
		return fmt.Errorf("waiting for the dead letters alone to be unapplied: %w; waiting for:%s", err, s.Stats.StuckReport(ctx, s.Cfg.Consumers))
	}
	return nil
}

// Watch restarts supervised daemons that exit without being asked to (as
// an orchestrator would) and counts them as crashes, until ctx ends.
func (s *Stack) Watch(ctx context.Context, log *FaultLog) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, p := range append([]*Proc{s.Catalog, s.Projector, s.ES}, s.Publishers...) {
			if !p.Crashed() || !p.restartDue() {
				continue
			}
			log.Crashes.Add(1)
			if p == s.Projector {
				log.ProjectorCrashes.Add(1)
			}
			s.Sup.Logf("watchdog: %s exited on its own (%s); restarting; last log lines:\n%s", p.Name(), exitText(p.ExitErr()), p.Tail(10))
			if err := p.Start(); err != nil {
				s.Sup.Logf("watchdog: restarting %s: %v", p.Name(), err)
			}
		}
	}
}
