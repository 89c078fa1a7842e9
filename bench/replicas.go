package bench

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/relaytest"
)

// The replicas scenario runs each publisher replica small (one batch of
// replicaBulk rows in flight) behind the strict double at replicaRTT, so
// the replica, not Postgres or the CPU, bounds a drain: a batch takes
// about a round trip plus a claim and an outcome write, so one replica
// drains about a thousand events/s, well below the machine's drain
// ceiling (bench README, "publisher drain"), and what a second replica
// adds is what partitioned claiming allows.
const (
	replicaRTT         = 15 * time.Millisecond
	replicaConcurrency = 1
	replicaBulk        = 25
	replicaMaxEvents   = 30_000
	// replicaLease is the replicas' lease (short, to keep the kill run
	// short); the heartbeat is its default, lease/4.
	replicaLease = 5 * time.Second
)

// runReplicas measures a drain with 1 and 2 publisher replicas, and how
// long after a kill -9 of one of two replicas the survivor owns all
// partitions.
func runReplicas(ctx context.Context, r *Runner) error {
	bin, why, err := r.bins.path(ctx, "publisher")
	if err != nil {
		return err
	}
	if bin == "" {
		r.report.skip("replicas: %s; replica figures are missing", why)
		return nil
	}
	b, err := newPstest(ctx, replicaRTT)
	if err != nil {
		return err
	}
	defer b.Close()
	for run := 1; run <= r.cfg.Runs; run++ {
		for _, n := range []int{1, 2} {
			if err := r.replicaDrain(ctx, bin, b, n, run); err != nil {
				return fmt.Errorf("replicas, %d replica(s): %w", n, err)
			}
		}
		if err := r.replicaKill(ctx, bin, b, run); err != nil {
			return fmt.Errorf("replicas, kill: %w", err)
		}
	}
	return nil
}

// replicaEnv is publisherEnv with the replica-bound settings (later
// entries of an exec environment win).
func (r *Runner) replicaEnv(b *Backend, name string) ([]string, error) {
	port, err := relaytest.FreePort()
	if err != nil {
		return nil, err
	}
	return append(r.publisherEnv(b, name, port),
		"OUTBOX_CONCURRENCY="+strconv.Itoa(replicaConcurrency), "OUTBOX_BULK_SIZE="+strconv.Itoa(replicaBulk),
		"OUTBOX_LEASE_SECONDS="+replicaLease.String()), nil
}

// startReplicas resets the outbox and its ownership and starts n
// publishers on an empty outbox, returning once they share the partitions
// evenly (so the drain measures balanced replicas, not the first
// heartbeats).
func (r *Runner) startReplicas(ctx context.Context, bin string, b *Backend, n int, tag string) ([]*Daemon, error) {
	if err := r.db.reset(ctx); err != nil {
		return nil, err
	}
	for _, q := range []string{sqlResetPartitions, sqlResetPublishers} {
		if _, err := r.db.Pool.Exec(ctx, q); err != nil {
			return nil, fmt.Errorf("resetting partition ownership: %w", err)
		}
	}
	if err := b.EnsureTopic(ctx, events.Topic); err != nil {
		return nil, err
	}
	var ds []*Daemon
	for i := range n {
		name := fmt.Sprintf("publisher-replicas-%s-%d", tag, i)
		env, err := r.replicaEnv(b, name)
		if err == nil {
			var d *Daemon
			d, err = startDaemon(bin, name, r.cfg.RepoDir, r.workDir("logs"), env)
			if err == nil {
				ds = append(ds, d)
			}
		}
		if err != nil {
			stopDaemons(ds)
			return nil, err
		}
	}
	share := int(math.Ceil(64.0 / float64(n)))
	err := r.waitOwners(ctx, ds, 2*replicaLease+30*time.Second, func(owned map[string]int) bool {
		if len(owned) != n {
			return false
		}
		for _, c := range owned {
			if c < 64/n || c > share {
				return false
			}
		}
		return true
	})
	if err != nil {
		stopDaemons(ds)
		return nil, fmt.Errorf("waiting for %d replicas to share the partitions: %w", n, err)
	}
	return ds, nil
}

// replicaDrain seeds the outbox under n balanced replicas and measures the
// drain rate.
func (r *Runner) replicaDrain(ctx context.Context, bin string, b *Backend, n, run int) error {
	ds, err := r.startReplicas(ctx, bin, b, n, "i"+strconv.Itoa(n))
	if err != nil {
		return err
	}
	total := min(r.cfg.Events, replicaMaxEvents)
	err = NewFixture(r.cfg.Aggregates).Seed(ctx, r.db, total)
	if err == nil {
		err = analyze(ctx, r.db)
	}
	var use cpuUse
	if err == nil {
		use, err = r.measure(func() error { return r.waitDrained(ctx, ds, total) })
	}
	if stopErr := stopDaemons(ds); err == nil {
		err = stopErr
	}
	if err != nil {
		return err
	}
	ev, err := r.db.drainRate(ctx)
	if err != nil {
		return err
	}
	r.addRun(Measurement{ID: fmt.Sprintf("replicas.i%d", n), Scenario: "replicas",
		Name: fmt.Sprintf("publisher drain of %d rows over %d aggregates, %d replica(s) of concurrency %d, bulk %d, at %s round trip (%s)",
			total, r.cfg.Aggregates, n, replicaConcurrency, replicaBulk, replicaRTT, b.Name),
		Backend: b.Name, Unit: "events/s", Note: use.String()}, ev)
	r.logf("  run %d: replicas x%d: %.0f events/s; %s", run, n, ev, use)
	return nil
}

// replicaKill starts 2 balanced replicas, seeds, kills one with SIGKILL
// once a tenth is published and measures how long until the survivor owns
// every partition (outbox_partitions); the survivor then drains the rest.
func (r *Runner) replicaKill(ctx context.Context, bin string, b *Backend, run int) error {
	ds, err := r.startReplicas(ctx, bin, b, 2, "kill")
	if err != nil {
		return err
	}
	defer stopDaemons(ds)
	total := min(r.cfg.Events, replicaMaxEvents)
	if err := NewFixture(r.cfg.Aggregates).Seed(ctx, r.db, total); err != nil {
		return err
	}
	for {
		done, err := r.db.count(ctx, sqlCountPublished)
		if err != nil {
			return err
		}
		if done >= total/10 {
			break
		}
		if err := ds[0].Exited(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed, survivor := ds[1], ds[0]
	if err := killed.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing %s: %w", killed.Name, err)
	}
	at := time.Now()
	err = r.waitOwners(ctx, ds[:1], 2*replicaLease+30*time.Second, func(owned map[string]int) bool {
		return owned[survivor.Name] == 64
	})
	if err != nil {
		return fmt.Errorf("survivor taking the killed replica's partitions: %w", err)
	}
	moved := time.Since(at).Seconds()
	if err := r.waitDrained(ctx, ds[:1], total); err != nil {
		return err
	}
	r.addRun(Measurement{ID: "replicas.kill-moved", Scenario: "replicas",
		Name:    fmt.Sprintf("killed replica's partitions moved to the survivor after (kill -9 of 1 of 2, lease %s, heartbeat %s)", replicaLease, replicaLease/4),
		Backend: b.Name, Unit: "s"}, moved)
	r.logf("  run %d: replicas kill: partitions moved after %.2fs (lease %s)", run, moved, replicaLease)
	return nil
}

// waitOwners polls outbox_partitions (leased partitions per owner) until
// ok holds, failing when a daemon exits or timeout passes.
func (r *Runner) waitOwners(ctx context.Context, ds []*Daemon, timeout time.Duration, ok func(owned map[string]int) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		owned, err := r.db.leasedPartitions(ctx)
		if err != nil {
			return err
		}
		if ok(owned) {
			return nil
		}
		for _, d := range ds {
			if err := d.Exited(); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("partitions per owner still %v after %s", owned, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopDaemons stops every daemon still running (SIGTERM, 30 s grace) and
// returns the first failure; a killed one reports its kill.
func stopDaemons(ds []*Daemon) error {
	var first error
	for _, d := range ds {
		if d.Exited() != nil {
			continue
		}
		if err := d.Stop(30 * time.Second); err != nil && first == nil {
			first = fmt.Errorf("%s: exit: %w (log %s)", d.Name, err, d.LogPath)
		}
	}
	return first
}
