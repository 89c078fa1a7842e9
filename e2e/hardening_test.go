//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestHardeningFaults runs the hardening cases of the fault suite on a
// stack of their own (Suite.RunHardening: a projector SIGKILL seen by relayctl status and its
// stall detector, a topic deleted and re-created, Pub/Sub frozen during a
// projector SIGTERM), followed by the suite's Pub/Sub restart, on a
// shorter workload. `make e2e` runs it after TestFaultSuite: a frozen
// emulator can keep ordered keys pinned to abandoned streams until it
// restarts, which would leak into the suite's later phases. Alone:
//
//	go -C e2e test -tags e2e -run TestHardeningFaults -v .
//
// Knobs: E2E_EVENTS (default
// 9000), E2E_PG_PORT (default 25434), EVENTRELAY_PUBSUB=pstest.
func TestHardeningFaults(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(repo, ".run", "e2e", time.Now().Format("20060102-150405")+"-hardening")
	binDir := filepath.Join(runDir, "bin")
	if err := BuildBinaries(context.Background(), repo, binDir); err != nil { // before the budget: minutes on a loaded machine
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	emu, why := EmulatorAvailable(ctx, repo)
	if !emu {
		t.Logf("Pub/Sub is pstest, not the emulator: %s", why)
	}
	s := &Suite{Cfg: SuiteConfig{
		Stack: StackConfig{
			Repo: repo, BinDir: binDir, RunDir: runDir,
			PGDir: filepath.Join(repo, ".run", "pg-e2e"), PGPort: envInt("E2E_PG_PORT", 25434),
			Database: "eventrelay_e2e", Emulator: emu,
			PublisherEnv: []string{"OUTBOX_LEASE_SECONDS=5", "OUTBOX_RECLAIM_INTERVAL_SECONDS=1", "OUTBOX_MAX_BACKOFF_SECONDS=3"},
			ProjectorEnv: []string{"PROJECTOR_SHUTDOWN_TIMEOUT=15s", "PROJECTOR_ACK_DEADLINE=10s", "PROJECTOR_STALL_AFTER=8s"},
			Out:          os.Stdout,
		},
		Workload: WorkloadConfig{Events: envInt("E2E_EVENTS", 9000), Rate: 220, Aggregates: 500, Workers: 16},
		Out:      os.Stdout,
	}}
	finishSuite(t, s, s.RunHardening(ctx))
}
