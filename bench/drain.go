package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/relaytest"
)

// runDrain measures the built publisher: Events pending rows, 1 and 2
// instances, until the outbox is empty, against pstest and the emulator;
// and, on pstest, 1 instance in the log mode (drainLogOnce) and the log
// reader's takeover after kill -9 (logTakeover).
func runDrain(ctx context.Context, r *Runner) error {
	bin, why, err := r.bins.path(ctx, "publisher")
	if err != nil {
		return err
	}
	if bin == "" {
		r.report.skip("drain: %s; publisher figures are missing", why)
		return nil
	}
	cfg := r.cfg
	for run := 1; run <= cfg.Runs; run++ {
		bs, err := r.backends(ctx)
		if err != nil {
			return err
		}
		for _, b := range bs {
			for _, n := range []int{1, 2} {
				if err := r.drainOnce(ctx, bin, b, n, run); err != nil {
					closeAll(bs)
					return fmt.Errorf("%s, %d instance(s): %w", b.Name, n, err)
				}
			}
			// The log mode beside, on pstest: both modes in one run.
			if b.Server == "pstest" {
				if err := r.drainLogOnce(ctx, bin, b, run); err != nil {
					closeAll(bs)
					return fmt.Errorf("%s, log mode: %w", b.Name, err)
				}
				if b.RTT == 0 {
					if err := r.logTakeover(ctx, bin, b, run); err != nil {
						closeAll(bs)
						return fmt.Errorf("%s, log reader takeover: %w", b.Name, err)
					}
				}
			}
		}
		closeAll(bs)
	}
	return nil
}

func (r *Runner) drainOnce(ctx context.Context, bin string, b *Backend, instances, run int) error {
	cfg := r.cfg
	if err := r.db.reset(ctx); err != nil {
		return err
	}
	if err := b.EnsureTopic(ctx, events.Topic); err != nil {
		return err
	}
	startup, err := r.publisherStartup(ctx, bin, b, run)
	if err != nil {
		return err
	}
	if err := NewFixture(cfg.Aggregates).Seed(ctx, r.db, cfg.Events); err != nil {
		return err
	}
	if err := analyze(ctx, r.db); err != nil {
		return err
	}
	var ds []*Daemon
	stopAll := func() error {
		var first error
		for _, d := range ds {
			if err := d.Stop(30 * time.Second); err != nil && first == nil {
				first = fmt.Errorf("%s: exit: %w (log %s)", d.Name, err, d.LogPath)
			}
		}
		return first
	}
	sentBefore := b.Double.Stats()
	a := r.cpu.sample()
	for i := range instances {
		port, err := relaytest.FreePort()
		if err != nil {
			return err
		}
		// One name (and log) per run: a slow run's log is kept for reading.
		name := fmt.Sprintf("publisher-%s-i%d-%d-r%d", b.Name, instances, i, run)
		d, err := startDaemon(bin, name, r.cfg.RepoDir, r.workDir("logs"), r.publisherEnv(b, name, port))
		if err != nil {
			stopAll()
			return err
		}
		ds = append(ds, d)
		r.cpu.daemons = map[int]string{}
		for _, d := range ds {
			r.cpu.daemons[d.Pid()] = "publisher"
		}
	}
	// Profile the first instance of the first run while it drains.
	var profile string
	profDone := make(chan struct{})
	if run == 1 && !cfg.Smoke {
		go func() {
			defer close(profDone)
			profile = r.profileDaemon(ctx, ds[0], fmt.Sprintf("drain.%s.i%d", b.Name, instances), 5)
		}()
	} else {
		close(profDone)
	}
	err = r.waitDrained(ctx, ds, cfg.Events)
	use := a.to(r.cpu.sample())
	cost := costSince(b, sentBefore, cfg.Events, cpuSecondsOf(use, "publisher"), "publisher")
	<-profDone
	var peak float64
	for _, d := range ds {
		peak = max(peak, d.PeakRSS())
	}
	if stopErr := stopAll(); err == nil {
		err = stopErr
	}
	r.cpu.daemons = nil
	if err != nil {
		return err
	}
	ev, err := r.db.drainRate(ctx)
	if err != nil {
		return err
	}
	r.addRun(Measurement{ID: fmt.Sprintf("drain.%s.i%d", b.Name, instances), Scenario: "drain",
		Name:    fmt.Sprintf("publisher drain of %d rows over %d aggregates, %d instance(s), bulk %d", cfg.Events, cfg.Aggregates, instances, cfg.Bulk),
		Backend: b.Name, Unit: "events/s", Note: cost.String() + "; " + use.String(), Profile: profile}, ev)
	cost.record(r, fmt.Sprintf("drain.%s.i%d", b.Name, instances), fmt.Sprintf("publisher drain, %d instance(s)", instances), b.Name)
	if instances == 1 {
		r.recordDrainPostgres(fmt.Sprintf("drain.%s.i1", b.Name), "poll mode", b.Name, use, cfg.Events)
	}
	r.addRun(Measurement{ID: fmt.Sprintf("drain.%s.i%d.cpu", b.Name, instances), Scenario: "drain",
		Name:    fmt.Sprintf("publisher drain, %d instance(s): CPU per 1,000 events (every instance, from process start)", instances),
		Backend: b.Name, Unit: "CPU s / 1k events"}, cost.cpuSeconds/float64(cfg.Events)*1000)
	r.addRun(Measurement{ID: fmt.Sprintf("drain.%s.i%d.cpu-drain", b.Name, instances), Scenario: "drain",
		Name: fmt.Sprintf("publisher drain, %d instance(s): CPU per 1,000 events (every instance, start-up excluded: "+
			"the CPU of an instance starting on an empty outbox until ready taken off each)", instances),
		Backend: b.Name, Unit: "CPU s / 1k events"}, max(0, cost.cpuSeconds-float64(instances)*startup)/float64(cfg.Events)*1000)
	r.addRun(Measurement{ID: "drain." + b.Name + ".startup-cpu", Scenario: "drain",
		Name:    "publisher start-up on an empty outbox, until ready and " + startupIdle.String() + " after: CPU seconds",
		Backend: b.Name, Unit: "CPU s"}, startup)
	r.addRun(Measurement{ID: "memory.publisher." + b.Name, Scenario: "memory",
		Name: "publisher (" + b.Name + ", drain)", Backend: b.Name, Unit: "MB"}, peak)
	r.logf("  run %d: drain %s x%d: %.0f events/s, peak RSS %.0f MB; %s (start-up %.3f CPU s per instance); %s",
		run, b.Name, instances, ev, peak, cost, startup, use)
	return nil
}

// startupIdle is how long publisherStartup lets the instance run after it
// is ready: its first claim, partition and maintenance rounds.
const startupIdle = 500 * time.Millisecond

// publisherStartup returns the CPU seconds a publisher instance spends
// starting, measured on an empty outbox: from process start until ready
// and startupIdle after. The drain's CPU counts every instance from its
// start, while the library's ceiling (childPublishRun) counts only its
// publish window, its client made before: taking an instance's start-up
// off each instance's CPU compares the two over the same kind of window.
func (r *Runner) publisherStartup(ctx context.Context, bin string, b *Backend, run int) (float64, error) {
	port, err := relaytest.FreePort()
	if err != nil {
		return 0, err
	}
	name := fmt.Sprintf("publisher-%s-startup-%d", b.Name, run)
	d, err := startDaemon(bin, name, r.cfg.RepoDir, r.workDir("logs"), r.publisherEnv(b, name, port))
	if err != nil {
		return 0, err
	}
	err = waitReady(ctx, d, "127.0.0.1:"+strconv.Itoa(port))
	if err == nil {
		time.Sleep(startupIdle)
	}
	st, ok := readStat(d.Pid())
	if stopErr := d.Stop(30 * time.Second); err == nil && stopErr != nil {
		err = fmt.Errorf("%s: exit: %w (log %s)", d.Name, stopErr, d.LogPath)
	}
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%s: no /proc stat", d.Name)
	}
	return float64(st.utime+st.stime) / clockTicks, nil
}

// drainRate is published rows per second from the first claim to the last
// publish.
func (d *DB) drainRate(ctx context.Context) (float64, error) {
	var n int
	var span float64
	if err := d.Pool.QueryRow(ctx, sqlDrainSpan).Scan(&n, &span); err != nil {
		return 0, fmt.Errorf("drain span: %w", err)
	}
	return float64(n) / span, nil
}

// publisherEnv configures one publisher instance for the bench.
func (r *Runner) publisherEnv(b *Backend, worker string, port int) []string {
	return []string{
		"DATABASE_URL=" + r.db.URL, "DATABASE_SCHEMA=" + Schema,
		"PUBSUB_PROJECT_ID=" + Project, "PUBSUB_EMULATOR_HOST=" + b.Config.EmulatorHost,
		"OUTBOX_WORKER_ID=" + worker, "OUTBOX_BULK_SIZE=" + strconv.Itoa(r.cfg.Bulk),
		"OUTBOX_HTTP_HOST=127.0.0.1", "OUTBOX_HTTP_PORT=" + strconv.Itoa(port),
		"OUTBOX_RETENTION_SECONDS=0", // keep published rows: the span is read from them
	}
}

// waitDrained polls until every row is published, failing on failed rows,
// a daemon exit, or no progress for a minute. Each poll asks only whether
// a row is left, and every progressEvery when the newest row was
// published (one index entry each): a count of the backlog is Postgres
// work that competes with the drain (200 to 700 ms at 200,000 rows).
func (r *Runner) waitDrained(ctx context.Context, ds []*Daemon, total int) error {
	const progressEvery = 10 * time.Second
	last, lastChange, lastCheck := -1, time.Now(), time.Time{}
	for {
		for _, d := range ds {
			if err := d.Exited(); err != nil {
				return err
			}
			d.PeakRSS()
		}
		leftOver, err := r.db.count(ctx, sqlAnyPending)
		if err != nil {
			return err
		}
		if leftOver == 0 {
			return nil
		}
		if failed, _ := r.db.count(ctx, sqlCountFailed); failed > 0 {
			return fmt.Errorf("%d rows ended failed (see %s)", failed, ds[0].LogPath)
		}
		if time.Since(lastCheck) >= progressEvery {
			newest, err := r.db.count(ctx, sqlLastPublished)
			if err != nil {
				return err
			}
			lastCheck = time.Now()
			if newest != last {
				last, lastChange = newest, time.Now()
			} else if time.Since(lastChange) > time.Minute {
				left, _ := r.db.count(ctx, sqlCountPending)
				return fmt.Errorf("no progress for a minute with %d of %d rows unpublished (see %s)", left, total, ds[0].LogPath)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
