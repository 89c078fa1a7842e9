// Command relaybench is eventrelay's benchmark (`make bench`,
// `make bench-smoke`): it measures the ceilings of Postgres and Pub/Sub and
// the publisher and projector against them in one run, prints a Markdown
// table with PASS/MISS per target, writes bench/results/<date>-<host>.json
// and (full runs) rewrites the bench block of bench/README.md.
//
// It needs DATABASE_URL pointing at a Postgres server it may create the
// database eventrelay_bench on (`eval "$(scripts/pg.sh start)"`; make does
// this), and uses the Pub/Sub emulator when gcloud and java are installed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/eventrelay/eventrelay/bench"
)

func main() {
	// The cost scenario runs this binary as its CPU burner ("burst" mode).
	if burned, err := bench.RunCPUBurstFromEnv(); burned {
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaybench:", err)
			os.Exit(1)
		}
		return
	}
	// The cost scenario runs this binary as its Pub/Sub (pstest behind the
	// strict double), outside the writers' process.
	if served, err := bench.RunPubsubServerFromEnv(); served {
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaybench:", err)
			os.Exit(1)
		}
		return
	}
	// The ceilings and the receive scenario run this binary as a measured
	// Pub/Sub client in its own process.
	if ran, err := bench.RunChildFromEnv(); ran {
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaybench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "relaybench:", err)
		os.Exit(1)
	}
}

func run() error {
	smoke := flag.Bool("smoke", false, "tiny sizes, one run, no emulator, README untouched (CI)")
	runs := flag.Int("runs", 0, "runs per scenario (default 3; smoke 1)")
	events := flag.Int("events", 0, "events drained/applied per run (default 200000)")
	aggregates := flag.Int("aggregates", 0, "distinct aggregates = ordering keys (default 5000)")
	bulk := flag.Int("bulk", 0, "claim batch / projector batch size (default 500)")
	scale := flag.String("scale", "", "pending-row counts of the claim-latency scenario, comma separated (default 10000,100000,1000000)")
	rates := flag.String("rates", "", "offered loads of the latency scenario, events/s, comma separated (default 200,1000 + the highest sustainable)")
	costRates := flag.String("cost-rates", "", "offered commit rates of the cost scenario, commits/s, comma separated (default 500,1000,2000; smoke 500)")
	costModes := flag.String("cost-modes", "", "modes of the cost scenario, comma separated (off,notify,poll,coalesced,sql,log,burst; default all)")
	costCPUs := flag.String("cost-cpus", "", "pin the cost scenario: Postgres on one set of CPUs, the bench on another, its daemons (publisher, burner) on the bench's or a third, e.g. db=0-1,app=2,relay=3 (default no pinning)")
	latencyEach := flag.Duration("latency-each", 0, "duration of each offered-load step of latency and cost (default 10s; smoke 1s)")
	only := flag.String("only", "", "run only these scenarios, comma separated (ceilings,drain,replicas,apply,receive,latency,scale,cost,readwait)")
	emulator := flag.String("emulator", "", "auto|on|off: use the real Pub/Sub emulator (default auto; smoke off)")
	rtts := flag.String("rtts", "", "round trips of the strict Pub/Sub double in front of every server, comma separated (default 0,15ms)")
	emuPort := flag.Int("emulator-port", 0, "port of the bench's private emulator (default 28185)")
	dbName := flag.String("db", "", "bench database name, dropped at every run (default eventrelay_bench)")
	out := flag.String("out", "", "directory of the JSON results (default bench/results; smoke and -only runs .run/bench)")
	readme := flag.String("readme", "", "README to rewrite the bench block of, relative to the repository root (default bench/README.md for complete full runs, none for smoke/partial/failed runs; '-' for none)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the bench process (the in-process loops) to this file")
	timeout := flag.Duration("timeout", 3*time.Hour, "give up after this long")
	flag.Parse()

	cfg := bench.Config{}
	if *smoke {
		cfg = bench.Smoke()
	}
	cfg.AdminURL = os.Getenv("DATABASE_URL")
	repo, err := repoRoot()
	if err != nil {
		return err
	}
	cfg.RepoDir = repo
	cfg.OutDir = *out
	if cfg.OutDir == "" {
		cfg.OutDir = "bench/results"
		if *smoke || *only != "" {
			// CI runs must not dirty the tree, and a partial run must not
			// overwrite the day's full result (same file name).
			cfg.OutDir = ".run/bench"
		}
	}
	if !filepath.IsAbs(cfg.OutDir) {
		cfg.OutDir = filepath.Join(repo, cfg.OutDir)
	}
	setInt(&cfg.Runs, *runs)
	setInt(&cfg.Events, *events)
	setInt(&cfg.Aggregates, *aggregates)
	setInt(&cfg.Bulk, *bulk)
	setInt(&cfg.EmulatorPort, *emuPort)
	if *emulator != "" {
		cfg.Emulator = *emulator
	}
	if *dbName != "" {
		cfg.Database = *dbName
	}
	if cfg.ScaleSizes, err = ints(*scale, cfg.ScaleSizes, "-scale"); err != nil {
		return err
	}
	if *rates != "" {
		if cfg.Rates, err = ints(*rates, nil, "-rates"); err != nil {
			return err
		}
		cfg.LatencyMax = false
	}
	if cfg.CostRates, err = ints(*costRates, cfg.CostRates, "-cost-rates"); err != nil {
		return err
	}
	if *costModes != "" {
		cfg.CostModes = strings.Split(*costModes, ",")
	}
	if *costCPUs != "" {
		if cfg.CostCPUs, err = bench.ParseCPUSplit(*costCPUs); err != nil {
			return err
		}
	}
	if *latencyEach != 0 {
		cfg.LatencyEach = *latencyEach
	}
	if *rtts != "" {
		cfg.RTTs = nil
		for _, f := range strings.Split(*rtts, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-rtts: %q is not a duration (e.g. 0,15ms)", f)
			}
			cfg.RTTs = append(cfg.RTTs, d)
		}
	}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	command := "make bench"
	if *smoke {
		command = "make bench-smoke"
	}
	if len(os.Args) > 1 {
		command = "go -C bench run ./cmd/relaybench " + strings.Join(os.Args[1:], " ")
	}
	report, runErr := bench.Run(ctx, cfg, command, os.Stderr)
	if report == nil {
		return runErr
	}
	fmt.Println()
	report.Print(os.Stdout)
	path, err := report.WriteJSON(cfg.OutDir)
	if err != nil {
		return errors.Join(runErr, err)
	}
	rel, _ := filepath.Rel(repo, path)
	fmt.Printf("\nResult: %s\n", rel)

	target := *readme
	if target == "" && !*smoke && *only == "" {
		target = "bench/README.md"
	}
	if target != "" && target != "-" && runErr != nil {
		fmt.Printf("README not updated: the run had failures\n")
	} else if target != "" && target != "-" {
		if !filepath.IsAbs(target) {
			target = filepath.Join(repo, target)
		}
		if err := bench.UpdateReadme(target, report, rel); err != nil {
			return errors.Join(runErr, err)
		}
		fmt.Printf("README bench block updated: %s\n", target)
	}
	return runErr
}

func setInt(dst *int, v int) {
	if v != 0 {
		*dst = v
	}
}

func ints(s string, def []int, flagName string) ([]int, error) {
	if s == "" {
		return def, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// repoRoot walks up from the working directory to the go.mod of the module.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/eventrelay/eventrelay\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run relaybench inside the eventrelay repository (no go.mod found above %s)", dir)
		}
	}
}
