package bench

import (
	"context"
	"fmt"
	"strconv"
)

// runCeilings measures what the parts can do with nothing else in the way:
// claim+mark in Postgres, publish to Pub/Sub, project into Postgres.
func runCeilings(ctx context.Context, r *Runner) error {
	cfg := r.cfg
	r.report.note("Claim ceiling SQL: %s.", drainSQL)
	for run := 1; run <= cfg.Runs; run++ {
		for _, w := range []int{1, 2} {
			if err := r.db.reset(ctx); err != nil {
				return err
			}
			if err := NewFixture(cfg.Aggregates).Seed(ctx, r.db, cfg.Events); err != nil {
				return err
			}
			if err := analyze(ctx, r.db); err != nil {
				return err
			}
			var ev float64
			var n int
			use, err := r.measure(func() (err error) {
				ev, n, err = r.drainStatements(ctx, cfg.Bulk, w)
				return err
			})
			if err != nil {
				return err
			}
			if n != cfg.Events {
				return fmt.Errorf("claim loop moved %d rows, want %d", n, cfg.Events)
			}
			r.addRun(Measurement{ID: fmt.Sprintf("ceiling.claim.w%d", w), Scenario: "ceiling",
				Name: fmt.Sprintf("claim+mark loop, %d worker(s), bulk %d", w, cfg.Bulk), Backend: "postgres",
				Unit: "events/s"}, ev)
			r.logf("  run %d: claim+mark w=%d: %.0f events/s; %s", run, w, ev, use)
		}

		bs, err := r.backends(ctx)
		if err != nil {
			return err
		}
		for _, b := range bs {
			topic, err := b.CreateTopic(ctx, "bench-ceiling")
			if err != nil {
				closeAll(bs)
				return err
			}
			sentBefore := b.Double.Stats()
			// The library publishes in a child process: the bench process
			// hosts the double (and pstest), whose CPU is not the library's.
			res, err := r.startChild(ctx, "publish-"+b.Name, childSpec{Role: childPublish, EmulatorHost: b.Config.EmulatorHost,
				Topic: topic, Events: cfg.Events, Aggregates: cfg.Aggregates})
			b.DeleteTopic(context.Background(), topic)
			if err != nil {
				closeAll(bs)
				return err
			}
			cost := costSince(b, sentBefore, res.Events, res.CPUSeconds, "library (own process)")
			r.addRun(Measurement{ID: "ceiling.publish." + b.Name, Scenario: "ceiling",
				Name: fmt.Sprintf("publish loop (client library, own process), ordering keys over %d aggregates", cfg.Aggregates), Backend: b.Name,
				Unit: "events/s", Note: cost.String()}, res.rate())
			cost.record(r, "ceiling.publish."+b.Name, "library publish loop (own process)", b.Name)
			r.addRun(Measurement{ID: "ceiling.publish." + b.Name + ".cpu", Scenario: "ceiling",
				Name: "publish loop (client library, own process): CPU per 1,000 events", Backend: b.Name,
				Unit: "CPU s / 1k events"}, res.cpuPer1k())
			r.logf("  run %d: publish %s: %.0f events/s; %s", run, b.Name, res.rate(), cost)
		}
		closeAll(bs)

		// The projector's inbox insert and a version-guarded upsert of a
		// read model row of the catalog's width (projector's
		// BenchmarkInboxWrite, on a fresh database of the same server).
		for _, pc := range []struct{ batch, workers, n int }{
			{cfg.Bulk, 1, cfg.Events}, {cfg.Bulk, 2, cfg.Events}, {1, 2, min(cfg.Events, 20_000)},
		} {
			var ev float64
			use, err := r.measure(func() error {
				m, err := r.runBenchmark(ctx, inboxPkg, "InboxWrite", 1, "BENCH_EVENTS="+strconv.Itoa(pc.n),
					"BENCH_KEYS="+strconv.Itoa(cfg.Aggregates), "BENCH_BATCH="+strconv.Itoa(pc.batch), "BENCH_WORKERS="+strconv.Itoa(pc.workers))
				if err == nil {
					ev, err = metric(m, "events/s")
				}
				return err
			})
			if err != nil {
				return err
			}
			r.addRun(Measurement{ID: fmt.Sprintf("ceiling.project.b%d.w%d", pc.batch, pc.workers), Scenario: "ceiling",
				Name:    fmt.Sprintf("inbox insert + guarded upsert, batch %d, %d worker(s)", pc.batch, pc.workers),
				Backend: "postgres", Unit: "events/s"}, ev)
			r.logf("  run %d: project batch=%d w=%d: %.0f events/s; %s", run, pc.batch, pc.workers, ev, use)
		}
	}
	return nil
}

// addRun records one run of a measurement.
func (r *Runner) addRun(m Measurement, v float64) {
	m.Runs = []float64{v}
	r.report.add(m)
}
