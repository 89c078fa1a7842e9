package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/settings"
)

// DemoConfig is one `make demo` run.
type DemoConfig struct {
	Stack    StackConfig
	Workload WorkloadConfig
	// Settle bounds the wait for the pipeline to drain after the workload
	// (default 2m).
	Settle time.Duration
	Out    io.Writer
}

// RunDemo starts the whole system, drives the workload with a live
// progress line, waits until everything is projected, prints the summary
// and the result of `relayctl verify`, and stops everything it started
// (also when ctx is cancelled by Ctrl-C). It returns an error unless the
// read models converged.
func RunDemo(ctx context.Context, cfg DemoConfig) (err error) {
	if cfg.Settle == 0 {
		cfg.Settle = 2 * time.Minute
	}
	out := cfg.Out
	emu, why := EmulatorAvailable(ctx, cfg.Stack.Repo)
	cfg.Stack.Emulator = emu
	kind := "the real Pub/Sub emulator"
	if !emu {
		kind = "an EMBEDDED PSTEST SERVER (fallback: " + why + ")"
	}
	fmt.Fprintf(out, "eventrelay demo: Pub/Sub is %s; logs in %s\n", kind, cfg.Stack.RunDir)
	defer func() {
		result := "CONVERGED"
		if err != nil {
			result = "FAILED: " + err.Error()
		}
		fmt.Fprintf(out, "eventrelay demo: %s (Pub/Sub: %s)\n", result, kind)
	}()

	stack, err := StartStack(ctx, cfg.Stack)
	if err != nil {
		return fmt.Errorf("starting the system: %w", err)
	}
	defer func() {
		alive := stack.Stop()
		fmt.Fprintf(out, "stopped everything this demo started")
		if len(alive) > 0 {
			fmt.Fprintf(out, " EXCEPT pids %v (still alive!)", alive)
			if err == nil {
				err = fmt.Errorf("processes left running: %v", alive)
			}
		}
		fmt.Fprintln(out)
	}()
	printPIDs(out, stack)

	checker, err := NewOrderChecker(ctx, stack.PubSubConfig(), Topic, AuditSubscription)
	if err != nil {
		return err
	}
	defer checker.Close()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	go checker.Run(runCtx)
	go stack.Scraper.Run(runCtx, time.Second)

	wl, err := NewWorkload(cfg.Workload, NewCatalogClient(stack.CatalogURL))
	if err != nil {
		return err
	}
	wc := wl.Config()
	fmt.Fprintf(out, "workload: %d writes/s target for %s over %d videos (%d HTTP workers) against %s\n",
		int(wc.Rate), wc.Duration, wc.Aggregates, wc.Workers, stack.CatalogURL)
	progress := NewProgress(out, stack.Stats, stack.Scraper, wl)
	progCtx, stopProgress := context.WithCancel(runCtx)
	progDone := make(chan struct{})
	go func() { progress.Run(progCtx); close(progDone) }()

	start := time.Now()
	wl.Run(ctx)
	writeTime := time.Since(start)
	if ctx.Err() == nil {
		_, err = stack.Stats.WaitSettled(ctx, stack.Cfg.Consumers, cfg.Settle)
	}
	drained := time.Since(start)
	stopProgress()
	<-progDone
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if err != nil {
		fmt.Fprintln(out, "the pipeline did not drain:", err)
		fmt.Fprint(out, stack.Sup.TailAll(15))
	}
	stack.Scraper.ScrapeAll(ctx)
	sumErr := printDemoSummary(ctx, out, stack, wl, checker, writeTime, drained)
	converged, verifyOut, verr := stack.Verify(ctx)
	fmt.Fprintf(out, "relayctl verify:\n%s\n", indent(verifyOut))
	switch {
	case verr != nil:
		return verr
	case !converged:
		return errors.New("read models did not converge (see relayctl verify above)")
	case err != nil:
		return err
	}
	return sumErr
}

// PubSubConfig connects a client to the run's Pub/Sub server.
func (s *Stack) PubSubConfig() settings.PubSub {
	return settings.PubSub{ProjectID: s.Cfg.Project, EmulatorHost: s.PubSub.Host()}
}

// Verify runs `relayctl verify` (exit 0: converged, 1: drift).
func (s *Stack) Verify(ctx context.Context) (converged bool, output string, err error) {
	out, code, err := s.RelayctlCode(ctx, "verify")
	if err != nil {
		return false, out, fmt.Errorf("relayctl verify could not run: %w", err)
	}
	return code == 0, out, nil
}

func printPIDs(out io.Writer, s *Stack) {
	m := s.Sup.AllPIDs()
	m["postgres"] = []int{s.PG.PID()}
	if s.PubSub.Emulator {
		m["pubsub-emulator"] = s.PubSub.PIDs()
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%v", n, m[n]))
	}
	fmt.Fprintf(out, "pids: %s\n", strings.Join(parts, " "))
}

func printDemoSummary(ctx context.Context, out io.Writer, s *Stack, wl *Workload, chk *OrderChecker, writeTime, drained time.Duration) error {
	snap, err := s.Stats.Snapshot(ctx)
	if err != nil {
		return err
	}
	src, err := s.Stats.Source(ctx)
	if err != nil {
		return err
	}
	w := &wl.Stats
	ck := chk.Stats()
	t := &Table{}
	t.Row("writes acknowledged (create/update/delete)", fmt.Sprintf("%d (%d/%d/%d)", w.Acked.Load(), w.Creates.Load(), w.Updates.Load(), w.Deletes.Load()))
	t.Row("write throughput", fmt.Sprintf("%.0f events/s over %s", float64(w.Acked.Load())/writeTime.Seconds(), writeTime.Truncate(time.Millisecond)))
	t.Row("events in the outbox (business writes)", fmt.Sprint(snap.Outbox.Produced))
	t.Row("source versions (sum of videos.version)", fmt.Sprint(src.Versions))
	t.Row("published", fmt.Sprint(snap.Outbox.Published))
	for _, c := range s.Cfg.Consumers {
		lat, err := s.Stats.Latency(ctx, c)
		if err != nil {
			return err
		}
		t.Row("projected by "+c, fmt.Sprint(snap.Applied[c]))
		t.Row("  commit->projected p50 / p99 / max", fmt.Sprintf("%.0f ms / %.0f ms / %.0f ms", lat.P50Ms, lat.P99Ms, lat.MaxMs))
	}
	t.Row("end to end (first write to all projected)", drained.Truncate(time.Millisecond).String())
	t.Row("duplicates absorbed by the inbox", fmt.Sprintf("%.0f", s.Scraper.SumWhere("projector", "projector_duplicate_total")))
	t.Row("stale events skipped", fmt.Sprintf("%.0f", s.Scraper.SumWhere("projector", "projector_stale_skipped_total")))
	t.Row("dead-lettered", fmt.Sprintf("%.0f", s.Scraper.SumWhere("projector", "projector_dead_lettered_total")))
	t.Row("outbox rows failed", fmt.Sprint(snap.Outbox.Failed))
	t.Row("audit subscription: events / dup publishes / order violations", fmt.Sprintf("%d / %d / %d", ck.Events, ck.DuplicatePublishes, ck.Violations))
	if n := w.Failed.Load() + w.Rejected.Load(); n > 0 {
		t.Row("workload errors", fmt.Sprintf("%d (last: %v)", n, w.LastError()))
	}
	t.Row("strict Pub/Sub double", s.PubSub.DoubleLine())
	fmt.Fprintln(out, "summary:")
	t.Print(out)
	if ck.Violations > 0 {
		return fmt.Errorf("%d per-aggregate order violations: %v", ck.Violations, chk.Violations())
	}
	if n := s.PubSub.Double.Stats().Refused; n > 0 {
		return fmt.Errorf("the strict Pub/Sub double refused %d request(s) Cloud Pub/Sub would refuse", n)
	}
	return nil
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
