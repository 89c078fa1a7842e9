//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestFaultSuite is `make e2e`: the whole system as separate processes on
// the real Pub/Sub emulator (pstest only when the emulator is not
// installed, said loudly), a workload of >= 20,000 events over 1,000
// videos, and every fault it injects (see Suite.faults, Suite.poison and
// Suite.staleRedrive). It fails with the assertion table and the tail of
// every process log.
//
// Knobs: E2E_EVENTS (default 21000), E2E_RATE (default 220/s),
// E2E_AGGREGATES (default 1000), E2E_PG_PORT (default 25434),
// EVENTRELAY_PUBSUB=pstest, and E2E_BIN_DIR to run prebuilt binaries (e.g.
// built from a tree with the version guard or the fencing broken, to see
// the suite fail).
func TestFaultSuite(t *testing.T) {
	s := &Suite{Cfg: faultSuiteConfig(t, "", WorkloadConfig{
		Events:     envInt("E2E_EVENTS", 21000),
		Rate:       float64(envInt("E2E_RATE", 220)),
		Aggregates: envInt("E2E_AGGREGATES", 1000),
		Workers:    16,
	})}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute) // after the build
	defer cancel()
	finishSuite(t, s, s.Run(ctx))
}

// TestFaultSuiteLogMode is the fault suite with the publishers in the log
// mode (Suite.RunLogMode): publisher and reader SIGKILLs (the standby's
// takeover timed), the slot dropped mid-run, Postgres restarted, Pub/Sub
// down under running publishers, the topic deleted, the slot invalidated
// while the relay is down, and the consumers' poison, on a smaller
// workload (the emulator's ordered subscriptions leak threads over
// thousands of keys). `make e2e` runs it after TestFaultSuite.
//
// Knobs: E2E_LOG_EVENTS (default 8000), E2E_LOG_RATE (default 160/s),
// E2E_LOG_AGGREGATES (default 300), and TestFaultSuite's.
func TestFaultSuiteLogMode(t *testing.T) {
	cfg := faultSuiteConfig(t, "-log", WorkloadConfig{
		Events:     envInt("E2E_LOG_EVENTS", 8000),
		Rate:       float64(envInt("E2E_LOG_RATE", 160)),
		Aggregates: envInt("E2E_LOG_AGGREGATES", 300),
		Workers:    16,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // after the build
	defer cancel()
	cfg.Stack.LogMode = true
	s := &Suite{Cfg: cfg}
	finishSuite(t, s, s.RunLogMode(ctx))
}

// faultSuiteConfig builds the binaries (or takes E2E_BIN_DIR's) and
// returns the suite's configuration: its own Postgres (the suite restarts
// it), the real emulator when installed, short leases and timeouts.
func faultSuiteConfig(t *testing.T, runSuffix string, work WorkloadConfig) SuiteConfig {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	probe, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emu, why := EmulatorAvailable(probe, repo)
	kind := "the real Pub/Sub emulator"
	if !emu {
		kind = "an EMBEDDED PSTEST SERVER — FALLBACK (" + why + "); this run does not exercise the real emulator"
	}
	t.Logf("fault suite: Pub/Sub is %s", kind)

	runDir := filepath.Join(repo, ".run", "e2e", time.Now().Format("20060102-150405")+runSuffix)
	binDir := os.Getenv("E2E_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(runDir, "bin")
		start := time.Now()
		// Before the caller's budget: minutes on a loaded machine.
		if err := BuildBinaries(context.Background(), repo, binDir); err != nil {
			t.Fatal(err)
		}
		t.Logf("built binaries in %s (%s)", binDir, time.Since(start).Truncate(time.Millisecond))
	} else {
		t.Logf("E2E_BIN_DIR: using the binaries in %s as they are", binDir)
	}
	t.Logf("logs in %s", runDir)
	return SuiteConfig{
		Stack: StackConfig{
			Repo: repo, BinDir: binDir, RunDir: runDir,
			// Its own Postgres: the suite restarts it.
			PGDir:    filepath.Join(repo, ".run", "pg-e2e"),
			PGPort:   envInt("E2E_PG_PORT", 25434),
			Database: "eventrelay_e2e",
			Emulator: emu,
			PublisherEnv: []string{
				"OUTBOX_LEASE_SECONDS=5",
				"OUTBOX_RECLAIM_INTERVAL_SECONDS=1",
				"OUTBOX_MAX_ATTEMPTS=200",
				"OUTBOX_BASE_BACKOFF_SECONDS=200ms",
				"OUTBOX_MAX_BACKOFF_SECONDS=3",
				"OUTBOX_GRACE_PERIOD_SECONDS=10",
			},
			ProjectorEnv: []string{
				"PROJECTOR_SHUTDOWN_TIMEOUT=15s",
				// Messages a stopped projector held (flow control pulls
				// up to max_outstanding_messages ahead and keeps extending
				// their deadlines) come back after one ack deadline, and
				// ordered keys wait that long: the minimum (default 15s)
				// keeps the suite's restarts short.
				"PROJECTOR_ACK_DEADLINE=10s",
				// Short enough for the SIGKILL phase to see a stall of
				// the restarted projector reported and cleared.
				"PROJECTOR_STALL_AFTER=8s",
			},
			Out: os.Stdout,
		},
		Workload: work,
		Out:      os.Stdout,
	}
}

// finishSuite stops the suite and reports its table, failing t on a run
// error, a failed assertion or a process left running.
func finishSuite(t *testing.T, s *Suite, runErr error) {
	t.Helper()
	failed := runErr != nil || s.Table.Failed() > 0
	if failed && s.Stack != nil {
		t.Logf("process logs (tails):\n%s", s.Stack.Sup.TailAll(40))
	}
	alive := s.Stop()
	t.Logf("results:")
	s.Table.Print(os.Stdout)
	if runErr != nil {
		t.Errorf("FAIL suite could not complete: %v", runErr)
	}
	if n := s.Table.Failed(); n > 0 {
		// Each failed check on its own line, uncut: a CI log excerpt keeps what failed.
		for _, c := range s.Table.FailedChecks() {
			t.Errorf("FAIL %s", c)
		}
		t.Errorf("%d assertion(s) failed (table above); logs in %s", n, s.Cfg.Stack.RunDir)
	}
	if len(alive) > 0 {
		t.Errorf("processes left running after stop: %v", alive)
	}
	t.Logf("fault suite done: %s", map[bool]string{true: "FAILED", false: "passed"}[t.Failed()])
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
