package bench

import (
	"context"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestBurnCPUBurnsAtIdlePriority checks the burner's three parts apart, so
// that a busy machine (where an idle-priority thread rightly gets almost no
// CPU) cannot fail it: the thread is moved to SCHED_IDLE, the duty cycle
// spends CPU, and burnCPU returns when its context ends.
func TestBurnCPUBurnsAtIdlePriority(t *testing.T) {
	policy := make(chan uint32, 1)
	go func() { // the locked thread ends with this goroutine
		if err := lowerToIdle(); err != nil {
			t.Error(err)
			policy <- 0
			return
		}
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Error(err)
			policy <- 0
			return
		}
		policy <- attr.Policy
	}()
	if p := <-policy; p != unix.SCHED_IDLE {
		t.Errorf("policy after lowerToIdle = %d, want SCHED_IDLE (%d)", p, unix.SCHED_IDLE)
	}

	// The duty cycle at normal priority: 5 ms per 20 ms until 30 ms of
	// process CPU are spent, which takes about 120 ms on an idle machine.
	before := processCPU(t)
	deadline := time.Now().Add(20 * time.Second)
	for processCPU(t)-before < 30*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("spin used %v of CPU in 20 s at 5 ms per 20 ms, want 30ms", processCPU(t)-before)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		spin(ctx, 5*time.Millisecond, 20*time.Millisecond)
		cancel()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
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
}

func processCPU(t *testing.T) time.Duration {
	t.Helper()
	st, ok := readStat(os.Getpid())
	if !ok {
		t.Fatal("reading /proc/self/stat")
	}
	return time.Duration(st.utime+st.stime) * time.Second / clockTicks
}
