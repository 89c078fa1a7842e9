package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CPUBurstEnv, set to "<length>/<every>" (e.g. "4ms/40ms"), makes relaybench
// a CPU burner instead of a bench: one thread at idle priority (SCHED_IDLE)
// spins for length once every period until SIGTERM (RunCPUBurstFromEnv).
// The cost scenario's "burst" mode runs it next to the writers, with no
// relay.
//
// Why: a publisher does its work in bursts, one per fetch cooldown (claim,
// publish, mark), and at 500 commits/s it used about 0.10 of a core, about
// 4 ms per 40 ms cooldown. On a machine it shares with the database, the
// writers' commit p99 then also measures how the machine's CPUs react to a
// neighbour's bursts. The burner is such a neighbour that touches neither
// Postgres nor the network: what it does to the writers is the machine's
// share of the relay's figure, not the database's.
const CPUBurstEnv = "RELAYBENCH_CPU_BURST"

// costBurst is the burner's duty cycle in the cost scenario: the
// publisher's CPU at 500 commits/s (0.10 of a core) in one burst per
// default fetch cooldown.
const costBurst = "4ms/40ms"

// RunCPUBurstFromEnv runs the burner when CPUBurstEnv is set and reports
// whether it did; it returns at SIGTERM or SIGINT.
func RunCPUBurstFromEnv() (bool, error) {
	spec, ok := os.LookupEnv(CPUBurstEnv)
	if !ok {
		return false, nil
	}
	length, every, err := parseCPUBurst(spec)
	if err != nil {
		return true, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return true, burnCPU(ctx, length, every)
}

// parseCPUBurst reads "<length>/<every>".
func parseCPUBurst(spec string) (length, every time.Duration, err error) {
	l, e, ok := strings.Cut(spec, "/")
	if ok {
		length, err = time.ParseDuration(l)
		if err == nil {
			every, err = time.ParseDuration(e)
		}
	}
	if !ok || err != nil || length <= 0 || every <= length {
		return 0, 0, fmt.Errorf("%s=%q: want <length>/<every>, two durations with 0 < length < every (e.g. %s)", CPUBurstEnv, spec, costBurst)
	}
	return length, every, nil
}

// burnCPU spins for length every period on one OS thread at SCHED_IDLE,
// the lowest priority Linux has: any runnable task of a normal policy
// (a writer, a Postgres backend) preempts it on that CPU.
//
// The thread stays locked: when the calling goroutine ends, Go ends the
// thread with it instead of handing an idle-priority thread back to the
// scheduler.
func burnCPU(ctx context.Context, length, every time.Duration) error {
	if err := lowerToIdle(); err != nil {
		return err
	}
	spin(ctx, length, every)
	return nil
}

// lowerToIdle locks the calling goroutine to its OS thread and moves that
// thread to SCHED_IDLE.
func lowerToIdle() error {
	runtime.LockOSThread()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return fmt.Errorf("setting SCHED_IDLE: %w", err)
	}
	return nil
}

// spin busy-loops for length once every period until ctx ends.
func spin(ctx context.Context, length, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for start := time.Now(); time.Since(start) < length; {
		}
	}
}
