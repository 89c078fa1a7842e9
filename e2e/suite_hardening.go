package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/settings"
)

// hardening holds the results of the faults that prove the pipeline's
// hardening: a stall after a projector SIGKILL seen and cleared, a topic
// deleted and re-created without a failed row, a projector stopped within
// its grace while Pub/Sub does not answer.
type hardening struct {
	stall  ProjectorStall
	topic  TopicRecreate
	frozen FrozenStop
	ran    bool
}

// hardeningFaults runs the three in turn.
func (s *Suite) hardeningFaults(ctx context.Context) error {
	st := s.Stack
	s.hard.ran = true
	stallAfter := envDuration(st.Cfg.ProjectorEnv, "PROJECTOR_STALL_AFTER", 2*time.Minute)
	s.logf("phase 2b: SIGKILL the projector mid-burst; relayctl status must name its consumers while it is dead and stop after its restart; it must come back ready and stay up, and a stall of its projections (%s) must be reported and cleared", stallAfter)
	var err error
	if s.hard.stall, err = st.KillProjectorWatchStall(ctx, 15*time.Second, stallAfter, stallAfter+10*time.Second, s.writeLive, &s.Faults); err != nil {
		return err
	}

	s.logf("phase 2c: topic %s deleted and re-created while events are written; no row may fail, publishing must resume by itself", Topic)
	if s.hard.topic, err = st.RecreateTopic(ctx, s.Checker, s.writeLive); err != nil {
		return err
	}

	timeout := envDuration(st.Cfg.ProjectorEnv, "PROJECTOR_SHUTDOWN_TIMEOUT", 30*time.Second)
	s.logf("phase 2d: Pub/Sub frozen during a projector SIGTERM; it must exit 0 within its shutdown timeout (%s)", timeout)
	s.hard.frozen, err = st.StopProjectorPubSubFrozen(ctx, s.Checker, timeout, &s.Faults)
	return err
}

// writeLive updates a few live videos (the projector and topic cases need
// events whether or not the workload still runs); it returns how many
// writes the catalog acknowledged.
func (s *Suite) writeLive(ctx context.Context) int {
	client := NewCatalogClient(s.Stack.CatalogURL)
	n := 0
	for _, id := range s.Work.IDs() {
		if n == 20 {
			break
		}
		v, err := client.Get(ctx, id)
		if err != nil || v.GetDeletedAt() != nil {
			continue
		}
		if client.Update(ctx, id, randomChange()) == nil {
			n++
		}
	}
	return n
}

// checkHardening adds the results of hardeningFaults to the table.
func (s *Suite) checkHardening() {
	if !s.hard.ran {
		return
	}
	t, h := &s.Table, &s.hard
	t.Check("projector SIGKILLed: relayctl status named its consumers while dead, and not after its restart",
		fmt.Sprintf("%v after %s (dead %s, %d writes meanwhile, --oldest-slo %s); cleared %t; %s", h.stall.Named, h.stall.DetectedAfter.Round(time.Second),
			h.stall.Down.Round(time.Second), h.stall.Written, h.stall.StatusSLO, h.stall.StatusCleared, cut(h.stall.Said, 40)),
		len(h.stall.Named) == len(s.Stack.Cfg.Consumers) && h.stall.StatusCleared)
	t.Row("restarted projector: longest time applying nothing with a backlog (receiving nothing included)", fmt.Sprint(roundDurations(h.stall.Longest)))
	t.Check("restarted projector: holding messages, applying none past stall_after reported (readiness/metric), cleared",
		fmt.Sprintf("longest holding messages, applying none %v (stall_after %s); reported %q; cleared %t",
			roundDurations(h.stall.LongestHeld), h.stall.StallAfter, cut(h.stall.Detected, 50), h.stall.Cleared),
		!h.stall.Undetected() && h.stall.Cleared)
	t.Check("topic deleted mid-run: publishers paused it (readiness + gauge), resumed by themselves",
		fmt.Sprintf("blocked %t, %d writes meanwhile, missing %s, resumed %s after re-creation, %d re-driven; %s",
			h.topic.Blocked, h.topic.Written, h.topic.Missing.Round(time.Second), h.topic.Resumed.Round(100*time.Millisecond), h.topic.HeldBack, cut(h.topic.Readiness, 60)),
		h.topic.Blocked && h.topic.Written > 0 && h.topic.Resumed > 0)
	t.Check("Pub/Sub frozen during a projector SIGTERM: exit 0 within its shutdown timeout",
		fmt.Sprintf("%s after %s (timeout %s, holding %.0f messages)", h.frozen.Exit, h.frozen.Took.Round(100*time.Millisecond), h.frozen.Timeout, h.frozen.Inflight),
		h.frozen.Clean)
	t.Row("published events the emulator still held back a minute after the thaw (pinned ordered keys)", fmt.Sprint(h.frozen.HeldBack))
}

// envDuration reads key from env entries ("K=V"), the last one winning,
// as the daemons read it ("8s" or a number of seconds, settings.ParseDuration);
// def when it is absent or does not parse (the daemon then refuses to start).
func envDuration(env []string, key string, def time.Duration) time.Duration {
	d := def
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			if x, err := settings.ParseDuration(v); err == nil {
				d = x
			}
		}
	}
	return d
}

func roundDurations(m map[string]time.Duration) map[string]string {
	out := map[string]string{}
	for k, d := range m {
		out[k] = d.Round(time.Second).String()
	}
	return out
}

func cut(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

// RunHardening runs the workload with hardeningFaults alone, then the
// suite's Pub/Sub restart (RestartPubSub), settles, and
// fills s.Table with their checks and the delivery checks (nothing failed
// or pending, nothing lost, the audit subscription saw every event in
// order): the hardening cases without the rest of the suite, for
// iterating on them (TestHardeningFaults).
func (s *Suite) RunHardening(ctx context.Context) (err error) {
	s.Cfg.defaults()
	s.started = time.Now()
	if s.Stack, err = StartStack(ctx, s.Cfg.Stack); err != nil {
		return fmt.Errorf("starting the system: %w", err)
	}
	printPIDs(s.Cfg.Out, s.Stack)
	if s.Checker, err = NewOrderChecker(ctx, s.Stack.PubSubConfig(), Topic, AuditSubscription); err != nil {
		return err
	}
	bg, stopBG := context.WithCancel(ctx)
	defer stopBG()
	go s.Checker.Run(bg)
	go s.Stack.Scraper.Run(bg, time.Second)
	go s.Stack.Watch(bg, &s.Faults)
	if s.Work, err = NewWorkload(s.Cfg.Workload, NewCatalogClient(s.Stack.CatalogURL)); err != nil {
		return err
	}
	go NewProgress(s.Cfg.Out, s.Stack.Stats, s.Stack.Scraper, s.Work).Run(bg)
	var faultErr error
	done := make(chan struct{})
	go func() { defer close(done); s.Work.Run(ctx) }()
	if err := sleepCtx(ctx, 10*time.Second); err != nil {
		return err
	}
	faultErr = s.hardeningFaults(ctx)
	<-done
	if faultErr == nil {
		// As in the suite, where the Pub/Sub restart follows: it re-drives
		// what the emulator still holds on keys pinned to the streams the
		// frozen stop abandoned (see StopProjectorPubSubFrozen).
		faultErr = s.Stack.RestartPubSub(ctx, s.Checker, 6*time.Second, 2*time.Minute, &s.Faults)
	}
	if faultErr != nil {
		return fmt.Errorf("injecting faults: %w", faultErr)
	}
	if err := s.settle(ctx); err != nil {
		return err
	}
	s.Stack.Scraper.ScrapeAll(ctx)
	s.checkHardening()
	snap, err := s.Stack.Stats.Snapshot(ctx)
	if err != nil {
		return err
	}
	t := &s.Table
	t.Check("outbox rows failed / still pending", fmt.Sprintf("%d / %d", snap.Outbox.Failed, snap.Outbox.Lag), snap.Outbox.Failed == 0 && snap.Outbox.Lag == 0)
	for _, c := range s.Stack.Cfg.Consumers {
		_, n, err := s.Stack.Stats.Unapplied(ctx, c, 5)
		if err != nil {
			return err
		}
		t.Check("lost (committed, never applied) at "+c, fmt.Sprint(n), n == 0)
	}
	ck := s.Checker.Stats()
	t.Check("audit subscription: distinct events = outbox rows", fmt.Sprintf("%d = %d", ck.Events, snap.Outbox.Total), ck.Events == snap.Outbox.Total)
	t.Check("per-aggregate order violations (first-seen versions)", fmt.Sprint(ck.Violations), ck.Violations == 0)
	unclean := s.Faults.UncleanStops()
	t.Check("graceful (SIGTERM) stops that exited 0 in time", fmt.Sprintf("%v", unclean), len(unclean) == 0)
	t.Row("duration", time.Since(s.started).Truncate(time.Second).String())
	return nil
}
