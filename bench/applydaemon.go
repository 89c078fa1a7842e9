package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

// runApplyDaemon measures the built projector draining Events messages
// that wait on its subscription(s) of a fresh emulator: into Postgres, and
// into Postgres + the Elasticsearch test server (run in this process).
// keys is the number of ordering keys evs span.
func runApplyDaemon(ctx context.Context, r *Runner, evs []Event, keys int) error {
	bin, why, err := r.bins.path(ctx, "projector")
	if err != nil {
		return err
	}
	if bin == "" {
		r.report.skip("apply with the projector daemon: %s", why)
		return nil
	}
	if r.emu == nil {
		r.report.skip("apply with the projector daemon: needs the emulator (pstest delivers ~100 msgs/s per stream, far too slow for %d messages)", len(evs))
		return nil
	}
	sinks := []string{"pg", "pg+es"}
	for run := 1; run <= r.cfg.Runs; run++ {
		for _, sink := range sinks {
			err := r.applyDaemonOnce(ctx, bin, evs, keys, sink, run)
			if errors.Is(err, errSearchIdle) {
				r.report.skip("apply into pg+es: the projector daemon applied nothing to the search index (%v); is the search projection wired in the catalog demo's cmd/projector?", err)
				sinks = sinks[:1]
				continue
			}
			if err != nil {
				return fmt.Errorf("projector into %s: %w", sink, err)
			}
		}
	}
	// Leave a fresh JVM: the last run's ordered subscriptions keep a thread
	// per ordering key alive (thousands), which loads the machine.
	return r.restartEmulator(ctx)
}

// errSearchIdle: the Postgres consumer finished, the search consumer never
// started.
var errSearchIdle = errors.New("search consumer recorded no event")

func (r *Runner) applyDaemonOnce(ctx context.Context, bin string, evs []Event, keys int, sink string, run int) error {
	// A fresh JVM per run: the emulator leaks a thread per ordering key
	// per ordered subscription.
	if err := r.restartEmulator(ctx); err != nil {
		return err
	}
	b, err := r.emu.Backend(ctx, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := r.db.reset(ctx); err != nil {
		return err
	}
	withES := sink == "pg+es"
	env, consumers, cleanup, err := r.projectorEnv(ctx, b, withES)
	if err != nil {
		return err
	}
	defer cleanup()
	r.logf("  run %d: filling the subscription(s) with %d messages", run, len(evs))
	if err := fillSubscription(ctx, b, events.Topic, evs); err != nil {
		return err
	}
	a := r.cpu.sample()
	d, err := startDaemon(bin, "projector-"+sanitize(sink), filepath.Join(r.cfg.RepoDir, demoModule), r.workDir("logs"), env)
	if err != nil {
		return err
	}
	r.cpu.daemons = map[int]string{d.Pid(): "projector"}
	var profile string
	profDone := make(chan struct{})
	if run == 1 && !r.cfg.Smoke {
		go func() {
			defer close(profDone)
			time.Sleep(2 * time.Second) // past start-up
			profile = r.profileDaemon(ctx, d, "apply.emulator."+sanitize(sink), 5)
		}()
	} else {
		close(profDone)
	}
	err = r.waitInbox(ctx, d, consumers, len(evs))
	use := a.to(r.cpu.sample())
	<-profDone
	peak := d.PeakRSS()
	if stopErr := d.Stop(30 * time.Second); err == nil && stopErr != nil {
		err = fmt.Errorf("projector exit: %w (log %s)", stopErr, d.LogPath)
	}
	r.cpu.daemons = nil
	if err != nil {
		return err
	}
	var span float64
	for _, c := range consumers {
		var s float64
		if err := r.db.Pool.QueryRow(ctx, sqlInboxSpan, c).Scan(&s); err != nil {
			return fmt.Errorf("inbox span: %w", err)
		}
		span = max(span, s)
	}
	ev := float64(len(evs)) / span
	r.addRun(Measurement{ID: "apply.emulator." + sink, Scenario: "apply",
		Name:    fmt.Sprintf("projector daemon draining %d waiting messages over %d keys into %s (ordered subscription, configs/projector.yaml defaults)", len(evs), keys, sink),
		Backend: "emulator", Unit: "events/s", Note: use.String(), Profile: profile}, ev)
	r.addRun(Measurement{ID: "memory.projector.emulator." + sink, Scenario: "memory",
		Name: "projector (emulator, apply into " + sink + ")", Backend: "emulator", Unit: "MB"}, peak)
	r.logf("  run %d: projector daemon into %s: %.0f events/s, peak RSS %.0f MB; %s", run, sink, ev, peak, use)
	return nil
}

// projectorEnv creates the projector's topics and subscriptions on b (and
// an Elasticsearch test server when withES) and returns the daemon's
// environment, the inbox consumers to wait for and a cleanup.
func (r *Runner) projectorEnv(ctx context.Context, b *Backend, withES bool) ([]string, []string, func(), error) {
	for _, t := range []string{events.Topic, "catalog.video.events.dlq-pg", "catalog.video.events.dlq-es"} {
		if err := b.EnsureTopic(ctx, t); err != nil {
			return nil, nil, nil, err
		}
	}
	pgSub, err := b.CreateSubscription(ctx, events.Topic, true)
	if err != nil {
		return nil, nil, nil, err
	}
	port, err := relaytest.FreePort()
	if err != nil {
		return nil, nil, nil, err
	}
	env := []string{
		"DATABASE_URL=" + r.db.URL, "DATABASE_SCHEMA=" + Schema,
		"PUBSUB_PROJECT_ID=" + Project, "PUBSUB_EMULATOR_HOST=" + b.Config.EmulatorHost,
		"PROJECTOR_HTTP_PORT=" + strconv.Itoa(port), "PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_VIDEOS_SUBSCRIPTION=" + pgSub, "PROJECTOR_VIDEOS_DEAD_LETTER_TOPIC=catalog.video.events.dlq-pg",
	}
	consumers := []string{catproj.VideosConsumer}
	cleanup := func() { b.DeleteSubscription(context.Background(), pgSub) }
	if !withES {
		return append(env, "PROJECTOR_SEARCH_ENABLED=false"), consumers, cleanup, nil
	}
	esSub, err := b.CreateSubscription(ctx, events.Topic, true)
	if err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	es := elastictest.New(elastictest.Options{})
	env = append(env, "PROJECTOR_SEARCH_ENABLED=true", "ELASTIC_URL="+es.URL,
		"PROJECTOR_SEARCH_SUBSCRIPTION="+esSub, "PROJECTOR_SEARCH_DEAD_LETTER_TOPIC=catalog.video.events.dlq-es")
	return env, append(consumers, catproj.SearchConsumer), func() {
		cleanup()
		b.DeleteSubscription(context.Background(), esSub)
		es.Close()
	}, nil
}

// waitInbox polls until every consumer recorded total events, failing on
// a daemon exit or no progress for a minute.
func (r *Runner) waitInbox(ctx context.Context, d *Daemon, consumers []string, total int) error {
	last, lastChange := -1, time.Now()
	for {
		if err := d.Exited(); err != nil {
			return err
		}
		d.PeakRSS()
		done := 0
		for _, c := range consumers {
			n, err := r.db.count(ctx, sqlCountConsumer, c)
			if err != nil {
				return err
			}
			done += n
		}
		if done >= total*len(consumers) {
			return nil
		}
		if done != last {
			last, lastChange = done, time.Now()
		} else if len(consumers) > 1 && done == total && time.Since(lastChange) > 20*time.Second {
			if n, err := r.db.count(ctx, sqlCountConsumer, consumers[1]); err == nil && n == 0 {
				return errSearchIdle
			}
		} else if time.Since(lastChange) > time.Minute {
			return fmt.Errorf("no progress for a minute at %d of %d inbox rows (see %s)", done, total*len(consumers), d.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
