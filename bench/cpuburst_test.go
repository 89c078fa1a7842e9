package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestParseCPUBurst(t *testing.T) {
	l, e, err := parseCPUBurst(costBurst)
	if err != nil || l != 4*time.Millisecond || e != 40*time.Millisecond {
		t.Fatalf("parseCPUBurst(%q) = %v, %v, %v; want 4ms, 40ms", costBurst, l, e, err)
	}
	for _, bad := range []string{"", "4ms", "4ms/", "x/40ms", "0s/40ms", "40ms/40ms", "50ms/40ms", "-1ms/40ms"} {
		if _, _, err := parseCPUBurst(bad); err == nil {
			t.Errorf("parseCPUBurst(%q): no error", bad)
		}
	}
}

// TestBurnCPUBurnsAtIdlePriority runs the burner for a few periods (on a
// goroutine of its own, whose thread ends with it) and checks it spent CPU and stops with its context.
func TestBurnCPUBurnsAtIdlePriority(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	before := processCPU(t)
	done := make(chan error, 1)
	go func() { done <- burnCPU(ctx, 5*time.Millisecond, 20*time.Millisecond) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("burnCPU: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("burnCPU did not return after its context ended")
	}
	// About 15 bursts of 5 ms: at least a few ticks of process CPU.
	if used := processCPU(t) - before; used < 30*time.Millisecond {
		t.Errorf("the burner used %v of CPU in 300 ms at 5 ms per 20 ms, want at least 30ms", used)
	}
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	st, ok := readStat(os.Getpid())
	if !ok {
		t.Fatal("reading /proc/self/stat")
	}
	return time.Duration(st.utime+st.stime) * time.Second / clockTicks
}
