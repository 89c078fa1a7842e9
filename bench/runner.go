package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
)

// scenario is one named part of the bench.
type scenario struct {
	name string
	run  func(ctx context.Context, r *Runner) error
}

// scenarios run in this order: ceilings first, the figures that are
// compared with them after; the scenarios without the emulator last, so
// that it is stopped before them (an idle emulator JVM still takes a third
// of a core here, which the cost scenario would measure as the relay's).
var scenarios = []scenario{
	{"ceilings", runCeilings},
	{"drain", runDrain},
	{"replicas", runReplicas},
	{"apply", runApply},
	{"receive", runReceive},
	{"latency", runLatency},
	{"scale", runScale},
	{"cost", runCost},
	{"readwait", runReadWait},
}

// withoutEmulator are the scenarios that never use the emulator: a run of
// only these does not start one.
var withoutEmulator = map[string]bool{"scale": true, "cost": true, "readwait": true}

func knownScenario(name string) bool {
	for _, s := range scenarios {
		if s.name == name {
			return true
		}
	}
	return false
}

func scenarioNames() []string {
	var n []string
	for _, s := range scenarios {
		n = append(n, s.name)
	}
	return n
}

// Runner holds what the scenarios share.
type Runner struct {
	cfg    Config
	db     *DB
	emu    *Emulator
	report *Report
	cpu    cpuGroups
	log    io.Writer
	bins   *binaries
	failed []string
}

// Run runs the selected scenarios and returns the report (also when some
// scenario failed: the failures are in the report and in the error).
func Run(ctx context.Context, cfg Config, command string, log io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	r := &Runner{cfg: cfg, log: log, report: &Report{
		StartedAt: start.UTC(), Command: command, Smoke: cfg.Smoke,
		Config: ConfigEcho{Runs: cfg.Runs, Events: cfg.Events, Aggregates: cfg.Aggregates, Bulk: cfg.Bulk,
			ScaleSizes: cfg.ScaleSizes, Rates: cfg.Rates, CostRates: cfg.CostRates, CostModes: cfg.CostModes},
	}}
	r.logf("bench: preparing database %s", cfg.Database)
	db, err := openDB(ctx, cfg.AdminURL, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("preparing bench database: %w", err)
	}
	defer db.Close()
	r.db = db
	r.report.Machine = describeMachine(ctx, db, cfg.RepoDir)
	r.cpu.postmaster = findPostmaster(ctx, db)
	r.bins = &binaries{repo: cfg.RepoDir, dir: r.workDir("bin")}

	body, attrs := messageSize()
	r.report.note("Messages: %d-byte envelope (events.Codec.Encode of a state-carrying VideoUpdated) + %d bytes of attributes; ordering key = aggregate id.", body, attrs)

	// Build the daemons now: what is measured is the tree as it was when the
	// run started, even if it changes during a long run.
	daemons := map[string]bool{
		"publisher": cfg.wants("drain") || cfg.wants("latency") || cfg.wants("cost"),
		"projector": cfg.wants("apply") || cfg.wants("latency"),
	}
	var built []string
	for _, name := range []string{"publisher", "projector"} {
		if !daemons[name] {
			continue
		}
		r.logf("bench: building cmd/%s", name)
		if _, why, err := r.bins.path(ctx, name); err != nil {
			return r.report, err
		} else if why != "" {
			r.logf("bench: %s", why)
		}
		built = append(built, "cmd/"+name)
	}
	if len(built) > 0 {
		r.report.note("Daemons: %s built from the working tree at commit %s when the run started, "+
			"with a pprof listener added at build time (go build -overlay), run with their configs/*.yaml defaults except the "+
			"bench's database, Pub/Sub resources and ports.", strings.Join(built, " and "), r.report.Machine.GitCommit)
	}

	if err := r.startEmulator(ctx); err != nil {
		return r.report, err
	}
	defer r.stopEmulator()

	for i, s := range scenarios {
		if !cfg.wants(s.name) {
			continue
		}
		if r.emu != nil && !r.emulatorNeededFrom(i) {
			r.logf("bench: stopping the emulator: no scenario left needs it")
			r.stopEmulator()
		}
		r.logf("bench: scenario %s", s.name)
		t0 := time.Now()
		if err := s.run(ctx, r); err != nil {
			r.failed = append(r.failed, s.name)
			r.report.note("FAILED: scenario %s: %v", s.name, err)
			r.logf("bench: scenario %s FAILED: %v", s.name, err)
			if ctx.Err() != nil {
				break
			}
		}
		r.logf("bench: scenario %s took %s", s.name, time.Since(t0).Round(time.Second))
	}
	ds := doubles.get()
	r.report.note("Pub/Sub: every client went through the strict double (relaytest/strictpubsub: Cloud Pub/Sub's request rules, "+
		"round trips %v): %v.", cfg.RTTs, ds)
	r.logf("bench: strict Pub/Sub double: %v", ds)
	if ds.Refused > 0 {
		r.failed = append(r.failed, "strict double")
		r.report.note("FAILED: the strict double refused %d request(s) that Cloud Pub/Sub would refuse", ds.Refused)
	}
	r.report.Targets = evaluateTargets(ctx, r.report, cfg)
	r.report.Machine.LoadAvgAfter = loadAvg()
	r.report.Duration = time.Since(start).Round(time.Second).String()
	if len(r.failed) > 0 {
		return r.report, fmt.Errorf("bench: scenarios failed: %s", strings.Join(r.failed, ", "))
	}
	return r.report, nil
}

func (r *Runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func (r *Runner) startEmulator(ctx context.Context) error {
	if !r.emulatorNeededFrom(0) {
		return nil
	}
	if r.cfg.Emulator == "off" {
		r.report.skip("Pub/Sub emulator: disabled (-emulator=off); emulator figures are missing")
		return nil
	}
	if why := emulatorAvailable(r.cfg.RepoDir); why != "" {
		if r.cfg.Emulator == "on" {
			return fmt.Errorf("bench: -emulator=on but %s", why)
		}
		r.report.skip("Pub/Sub emulator: %s; emulator figures are missing", why)
		return nil
	}
	r.logf("bench: starting a fresh Pub/Sub emulator on 127.0.0.1:%d", r.cfg.EmulatorPort)
	emu, err := startEmulator(ctx, r.cfg.RepoDir, r.workDir("pubsub-emulator"), r.cfg.EmulatorPort)
	if err != nil {
		if r.cfg.Emulator == "on" {
			return err
		}
		r.report.skip("Pub/Sub emulator did not start (%v); emulator figures are missing", err)
		return nil
	}
	r.emu = emu
	r.cpu.emulatorPGID = emu.PGID()
	r.report.Machine.Emulator = emulatorVersion(ctx)
	return r.warmEmulator(ctx)
}

// emulatorNeededFrom reports whether a wanted scenario from scenarios[i]
// on uses the emulator.
func (r *Runner) emulatorNeededFrom(i int) bool {
	for _, s := range scenarios[i:] {
		if r.cfg.wants(s.name) && !withoutEmulator[s.name] {
			return true
		}
	}
	return false
}

// stopEmulator stops the emulator, if one runs; later scenarios see none.
func (r *Runner) stopEmulator() {
	if r.emu != nil {
		if err := r.emu.Stop(); err != nil {
			r.logf("bench: stopping the emulator: %v", err)
		}
		r.emu = nil
		r.cpu.emulatorPGID = 0
	}
}

// restartEmulator gives the next scenario a fresh, warmed-up JVM.
func (r *Runner) restartEmulator(ctx context.Context) error {
	if r.emu == nil {
		return nil
	}
	if err := r.emu.Restart(ctx); err != nil {
		return err
	}
	r.cpu.emulatorPGID = r.emu.PGID()
	return r.warmEmulator(ctx)
}

// warmEmulator pushes a few thousand messages through a scratch ordered
// subscription, so what follows does not measure the JVM's warm-up.
func (r *Runner) warmEmulator(ctx context.Context) error {
	b, err := r.emu.Backend(ctx, 0)
	if err != nil {
		return err
	}
	defer b.Close()
	topic, err := b.CreateTopic(ctx, "bench-warmup")
	if err != nil {
		return err
	}
	defer b.DeleteTopic(context.Background(), topic)
	sub, err := b.CreateSubscription(ctx, topic, true)
	if err != nil {
		return err
	}
	defer b.DeleteSubscription(context.Background(), sub)
	evs, err := NewFixture(50).Generate(5000)
	if err != nil {
		return err
	}
	if err := fillSubscription(ctx, b, topic, evs); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var got atomic.Int64
	s := b.Client.Subscriber(sub)
	s.ReceiveSettings.NumGoroutines = 4
	err = s.Receive(rctx, func(_ context.Context, m *pubsub.Message) {
		m.Ack()
		if got.Add(1) >= int64(len(evs)) {
			cancel()
		}
	})
	if err != nil && rctx.Err() == nil {
		return fmt.Errorf("emulator warm-up: %w", err)
	}
	return nil
}

// backends returns the Pub/Sub servers to measure against, each behind the
// strict double at every configured round trip: a fresh pstest and, when
// running, the emulator. Close each when done.
func (r *Runner) backends(ctx context.Context) ([]*Backend, error) {
	var out []*Backend
	for _, rtt := range r.cfg.RTTs {
		ps, err := newPstest(ctx, rtt)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, ps)
		if r.emu != nil {
			eb, err := r.emu.Backend(ctx, rtt)
			if err != nil {
				closeAll(out)
				return nil, err
			}
			out = append(out, eb)
		}
	}
	return out, nil
}

func closeAll(bs []*Backend) {
	for _, b := range bs {
		b.Close()
	}
}

// measure runs f between two CPU samples and returns the CPU use.
func (r *Runner) measure(f func() error) (cpuUse, error) {
	a := r.cpu.sample()
	err := f()
	return a.to(r.cpu.sample()), err
}

// profileDir is where this run's CPU profiles and query plans go, next to
// its JSON result.
func (r *Runner) profileDir() string {
	return filepath.Join(r.cfg.OutDir, r.report.baseName()+"-profiles")
}

// rel makes a path repository-relative for the report ("" stays "").
func (r *Runner) rel(p string) string {
	if p == "" {
		return ""
	}
	if rp, err := filepath.Rel(r.cfg.RepoDir, p); err == nil {
		return rp
	}
	return p
}

// workDir is this run's scratch directory .run/<database>/<name> (binaries,
// daemon logs, the emulator): per database, so a smoke run never touches
// a full run's files.
func (r *Runner) workDir(name string) string {
	return filepath.Join(r.cfg.RepoDir, ".run", r.cfg.Database, name)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
