//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStackRunsEachDaemonAsItsRole starts the stack on pstest and stops
// it: StartStack fails unless the catalog, every publisher and the
// projector are connected, each as its own role, neither superuser nor
// owner (checkRoles). No workload, no fault: the suites' first step alone.
//
//	go -C e2e test -tags e2e -run TestStackRunsEachDaemonAsItsRole -v .
//
// Knob: E2E_PG_PORT (default 25434).
func TestStackRunsEachDaemonAsItsRole(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(repo, ".run", "e2e", time.Now().Format("20060102-150405")+"-roles")
	binDir := filepath.Join(runDir, "bin")
	if err := BuildBinaries(context.Background(), repo, binDir); err != nil { // before the budget: minutes on a loaded machine
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := StartStack(ctx, StackConfig{
		Repo: repo, BinDir: binDir, RunDir: runDir,
		PGDir: filepath.Join(repo, ".run", "pg-e2e"), PGPort: envInt("E2E_PG_PORT", 25434),
		Database: "eventrelay_e2e", Out: os.Stdout,
	})
	if err != nil {
		t.Fatalf("starting the stack: %v (logs in %s)", err, runDir)
	}
	if alive := s.Stop(); len(alive) > 0 {
		t.Errorf("processes left running after stop: %v", alive)
	}
}
