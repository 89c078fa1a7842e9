// Command relaydemo runs eventrelay end to end on this machine: a private
// Postgres, a fresh Pub/Sub emulator (or, when the emulator is not
// installed, an embedded pstest server, said in the first and last lines),
// the Elasticsearch test server, the catalog service, two publishers and the
// projector as separate processes; it drives a mixed create/update/delete
// workload through the catalog's HTTP API with a live progress line, prints
// a summary and `relayctl verify`, and stops everything it started (also on
// Ctrl-C). Exit status 0 only when the read models converged.
//
//	relaydemo [-rate 300] [-duration 30s] [-aggregates 200] [-publishers 2]
//
// Flags default from the environment: DEMO_RATE, DEMO_DURATION,
// DEMO_AGGREGATES, DEMO_PUBLISHERS. EVENTRELAY_PUBSUB=pstest forces the
// fallback. `make demo` builds the binaries and runs it.
//
//	relaydemo pstest-server -port N
//
// runs the embedded pstest server alone (the fallback's process).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/eventrelay/eventrelay/e2e"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "pstest-server" {
		os.Exit(pstestServer(os.Args[2:]))
	}
	os.Exit(demo(os.Args[1:]))
}

func demo(args []string) int {
	fs := flag.NewFlagSet("relaydemo", flag.ContinueOnError)
	rate := fs.Float64("rate", envFloat("DEMO_RATE", 300), "target writes per second (env DEMO_RATE)")
	duration := fs.Duration("duration", envDuration("DEMO_DURATION", 30*time.Second), "how long the workload runs (env DEMO_DURATION)")
	aggregates := fs.Int("aggregates", envInt("DEMO_AGGREGATES", 200), "videos created (env DEMO_AGGREGATES)")
	publishers := fs.Int("publishers", envInt("DEMO_PUBLISHERS", 2), "publisher replicas (env DEMO_PUBLISHERS)")
	repo := fs.String("repo", ".", "repository root (scripts/, configs/)")
	binDir := fs.String("bin", "", "directory of the built binaries (default: this binary's directory)")
	runDir := fs.String("run-dir", "", "log directory (default .run/demo/<timestamp>)")
	pgPort := fs.Int("pg-port", envInt("DEMO_PG_PORT", 25433), "port of the demo's private Postgres in .run/pg-demo (env DEMO_PG_PORT; fixed per data directory)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := filepath.Abs(*repo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relaydemo:", err)
		return 2
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "pg.sh")); err != nil {
		fmt.Fprintf(os.Stderr, "relaydemo: %s is not the repository root (no scripts/pg.sh); run it from the repository or pass -repo\n", root)
		return 2
	}
	if *binDir == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "relaydemo:", err)
			return 2
		}
		*binDir = filepath.Dir(exe)
	}
	if *runDir == "" {
		*runDir = filepath.Join(root, ".run", "demo", time.Now().Format("20060102-150405"))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the harness at once
	}()
	err = e2e.RunDemo(ctx, e2e.DemoConfig{
		Stack: e2e.StackConfig{
			Repo:       root,
			BinDir:     *binDir,
			RunDir:     *runDir,
			PGDir:      filepath.Join(root, ".run", "pg-demo"),
			PGPort:     *pgPort,
			Database:   "eventrelay_demo",
			Publishers: *publishers,
			Out:        os.Stdout,
		},
		Workload: e2e.WorkloadConfig{Rate: *rate, Duration: *duration, Aggregates: *aggregates},
		Out:      os.Stdout,
	})
	if err != nil {
		return 1
	}
	return 0
}

func envFloat(k string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(k), 64); err == nil {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

func envDuration(k string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return v
	}
	return def
}
