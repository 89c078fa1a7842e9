package bench

import (
	"fmt"
	"strings"
	"time"
)

// Config sizes a benchmark run. Zero values get the full-run defaults of
// the targets in Validate; Smoke returns tiny sizes for CI.
type Config struct {
	// AdminURL connects to the Postgres server (any database); the bench
	// database is created next to it. Required.
	AdminURL string
	// Database is the name of the bench database (default eventrelay_bench;
	// smoke runs use eventrelay_bench_smoke). It is dropped and re-created at
	// the start of every run; two runs on one database refuse to overlap.
	Database string
	// RepoDir is the repository root (scripts, cmd packages, README).
	RepoDir string
	// OutDir receives the JSON result and profiles (default bench/results).
	OutDir string

	// Runs is how many times each scenario runs (default 3).
	Runs int
	// Events is the drain/apply size (default 200,000) and Aggregates the
	// number of distinct aggregates (ordering keys) they span (default 5,000).
	Events     int
	Aggregates int
	// Bulk is the claim batch size of the ceiling loop and the publisher
	// (OUTBOX_BULK_SIZE; default 500), and the projector write batch.
	Bulk int
	// ScaleSizes are the pending-row counts of the claim-latency scenario
	// (default 10k, 100k, 1M) and Retained the published rows pushed through
	// retention (default 1M).
	ScaleSizes []int
	Retained   int
	// ClaimSamples is how many claims are timed per table size (default 50).
	ClaimSamples int
	// Rates are the offered loads (events/s) of the latency scenario; the
	// highest sustainable rate is added when LatencyMax is set.
	Rates        []int
	LatencyMax   bool
	LatencyEach  time.Duration // duration of each offered-load step, latency and cost (default 10s)
	LatencyDrain time.Duration // how long to wait for stragglers (default 30s)
	// CostRates are the offered commit rates (commits/s) of the cost
	// scenario (default 500, 1,000 and 2,000).
	CostRates []int
	// CostModes restricts the cost scenario to these modes (off, notify,
	// poll, coalesced, sql, log, burst; default all). Targets comparing two
	// modes need both.
	CostModes []string
	// CostCPUs, when set, pins the Postgres server and the rest of the cost
	// scenario to disjoint CPUs for its duration (nil: no pinning).
	CostCPUs *CPUSplit

	// Emulator: "auto" (use it when gcloud and java are installed), "on"
	// (fail without it) or "off".
	Emulator string
	// EmulatorPort is the port of the bench's private emulator (default 28185).
	EmulatorPort int
	// RTTs are the round trips of the strict double in front of every
	// Pub/Sub server (default 0 and 15 ms, a fair planning figure for a
	// GKE pod). Ceilings, drains and latency at 1,000/s run at each;
	// apply, scale and the latency search at the first only.
	RTTs []time.Duration

	// Only, when non-empty, restricts the run to these scenario names.
	Only []string
	// Smoke marks a smoke run (tiny sizes, one run; the README is not
	// rewritten by default).
	Smoke bool
}

// Smoke returns the smoke-test sizes: the same scenarios in a few seconds.
func Smoke() Config {
	return Config{
		Runs: 1, Events: 2000, Aggregates: 50, Bulk: 100,
		ScaleSizes: []int{1000, 5000}, Retained: 5000, ClaimSamples: 10,
		Rates: []int{200}, CostRates: []int{500}, LatencyEach: time.Second, LatencyDrain: 10 * time.Second,
		Emulator: "off", Smoke: true, Database: "eventrelay_bench_smoke", EmulatorPort: 28186,
		RTTs: []time.Duration{0, 15 * time.Millisecond},
	}
}

// Validate fills defaults and checks the configuration; errors name the
// field.
func (c *Config) Validate() error {
	if c.AdminURL == "" {
		return fmt.Errorf("bench: AdminURL (DATABASE_URL) is required: run `eval \"$(scripts/pg.sh start)\"` or `make bench`")
	}
	if c.Database == "" {
		c.Database = "eventrelay_bench"
	}
	if !strings.HasPrefix(c.Database, "eventrelay_bench") {
		return fmt.Errorf("bench: Database %q must start with eventrelay_bench (it is dropped at every run)", c.Database)
	}
	if c.RepoDir == "" {
		c.RepoDir = "."
	}
	if c.OutDir == "" {
		c.OutDir = "bench/results"
	}
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 0 {
			return fmt.Errorf("bench: %s must be > 0, got %d", name, *v)
		}
		return nil
	}
	for _, f := range []struct {
		v    *int
		d    int
		name string
	}{
		{&c.Runs, 3, "Runs"}, {&c.Events, 200_000, "Events"}, {&c.Aggregates, 5_000, "Aggregates"},
		{&c.Bulk, 500, "Bulk"}, {&c.Retained, 1_000_000, "Retained"}, {&c.ClaimSamples, 50, "ClaimSamples"},
		{&c.EmulatorPort, 28185, "EmulatorPort"},
	} {
		if err := def(f.v, f.d, f.name); err != nil {
			return err
		}
	}
	if c.Aggregates > c.Events {
		return fmt.Errorf("bench: Aggregates (%d) must not exceed Events (%d)", c.Aggregates, c.Events)
	}
	if len(c.ScaleSizes) == 0 {
		c.ScaleSizes = []int{10_000, 100_000, 1_000_000}
	}
	for i, n := range c.ScaleSizes {
		if n <= 0 || (i > 0 && n <= c.ScaleSizes[i-1]) {
			return fmt.Errorf("bench: ScaleSizes must be positive and increasing, got %v", c.ScaleSizes)
		}
	}
	if len(c.Rates) == 0 {
		c.Rates = []int{200, 1000}
		c.LatencyMax = true
	}
	if len(c.CostRates) == 0 {
		c.CostRates = []int{500, 1000, 2000}
	}
	for _, n := range c.CostRates {
		if n <= 0 {
			return fmt.Errorf("bench: CostRates must be positive, got %v", c.CostRates)
		}
	}
	for _, m := range c.CostModes {
		if costModeNamed(m) == nil {
			return fmt.Errorf("bench: CostModes: unknown mode %q (%s)", m, strings.Join(costModeNames(), ", "))
		}
	}
	if len(c.RTTs) == 0 {
		c.RTTs = []time.Duration{0, 15 * time.Millisecond}
	}
	for _, d := range c.RTTs {
		if d < 0 {
			return fmt.Errorf("bench: RTTs must be >= 0, got %v", c.RTTs)
		}
	}
	if c.LatencyEach == 0 {
		c.LatencyEach = 10 * time.Second
	}
	if c.LatencyDrain == 0 {
		c.LatencyDrain = 30 * time.Second
	}
	switch c.Emulator {
	case "":
		c.Emulator = "auto"
	case "auto", "on", "off":
	default:
		return fmt.Errorf("bench: Emulator must be auto, on or off, got %q", c.Emulator)
	}
	for _, s := range c.Only {
		if !knownScenario(s) {
			return fmt.Errorf("bench: Only: unknown scenario %q (known: %s)", s, strings.Join(scenarioNames(), ", "))
		}
	}
	return nil
}

// wants reports whether the scenario is selected.
func (c *Config) wants(name string) bool {
	if len(c.Only) == 0 {
		return true
	}
	for _, s := range c.Only {
		if s == name {
			return true
		}
	}
	return false
}
