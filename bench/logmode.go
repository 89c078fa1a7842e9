package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
)

// logSlot names the log mode's replication slot and publication: the
// bench database's name (slot names are per server, and each run has its
// database).
func (d *DB) logSlot() string { return d.Name }

// logEnv selects the publisher's log mode (outbox.mode: log). The bench
// connects as the database's owner, a superuser: REPLICATION and the
// publication's ownership are given.
func (d *DB) logEnv() []string {
	return []string{"OUTBOX_MODE=log", "OUTBOX_LOG_SLOT=" + d.logSlot(), "OUTBOX_LOG_PUBLICATION=" + d.logSlot()}
}

// resetLog drops the log mode's slot and its published horizon: the next
// log-mode publisher starts from a new slot on the step's empty table, and
// the server keeps no WAL for a slot nobody reads.
func (d *DB) resetLog(ctx context.Context) error {
	if _, err := d.Pool.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, d.logSlot()); err != nil {
		return fmt.Errorf("dropping slot %s: %w", d.logSlot(), err)
	}
	if _, err := d.Pool.Exec(ctx, `DELETE FROM outbox_log_slots`); err != nil {
		return fmt.Errorf("resetting outbox_log_slots: %w", err)
	}
	return nil
}

// waitStreamed waits until the log mode's slot is streamed (the publisher
// created it and recovered the table: it reads the WAL from here on).
func (d *DB) waitStreamed(ctx context.Context, daemon *Daemon) error {
	return d.waitRow(ctx, daemon, time.Minute, "streamed",
		`SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active`, d.logSlot())
}

// waitRecovered waits until the log mode's slot is past its recovery
// (the rows not known to be published, republished and acknowledged,
// recorded in outbox_log_slots): from then on its reader only streams.
func (d *DB) waitRecovered(ctx context.Context, daemon *Daemon) error {
	return d.waitRow(ctx, daemon, 5*time.Minute, "past its recovery",
		`SELECT count(*) FROM outbox_log_slots WHERE slot_name = $1 AND NOT recovering AND published_xmin IS NOT NULL`, d.logSlot())
}

// waitRow polls the count query every 50ms until it is above 0, failing
// when daemon (if any) exits or after timeout: the slot is then not yet
// what.
func (d *DB) waitRow(ctx context.Context, daemon *Daemon, timeout time.Duration, what, sql string, args ...any) error {
	deadline := time.Now().Add(timeout)
	for {
		if daemon != nil {
			if err := daemon.Exited(); err != nil {
				return err
			}
		}
		n, err := d.count(ctx, sql, args...)
		if err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if daemon == nil {
				return fmt.Errorf("slot %s not %s after %s", d.logSlot(), what, timeout)
			}
			return fmt.Errorf("slot %s not %s %s after %s started (log %s)", d.logSlot(), what, timeout, daemon.Name, daemon.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// publishTimes receives a topic on a subscription of its own and keeps
// each event's Pub/Sub publish time (the server's, set when it accepted
// the Publish): the log mode marks no row published, so commit->published
// is measured at Pub/Sub.
type publishTimes struct {
	mu     sync.Mutex
	at     map[uuid.UUID]time.Time
	cancel context.CancelFunc
	done   chan error
	sub    string
	b      *Backend
	once   sync.Once
}

// receivePublishTimes starts receiving topic on a new subscription.
func receivePublishTimes(ctx context.Context, b *Backend, topic string) (*publishTimes, error) {
	sub, err := b.CreateSubscription(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	p := &publishTimes{at: map[uuid.UUID]time.Time{}, cancel: cancel, done: make(chan error, 1), sub: sub, b: b}
	s := b.Client.Subscriber(sub)
	s.ReceiveSettings.NumGoroutines = 2
	go func() {
		p.done <- s.Receive(rctx, func(_ context.Context, m *pubsub.Message) {
			m.Ack()
			id, err := uuid.Parse(m.Attributes[contract.AttrEventID])
			if err != nil {
				return
			}
			p.mu.Lock()
			if _, seen := p.at[id]; !seen {
				p.at[id] = m.PublishTime
			}
			p.mu.Unlock()
		})
	}()
	return p, nil
}

// wait waits until n distinct events were received, failing when the
// publisher exits or nothing arrives for a minute.
func (p *publishTimes) wait(ctx context.Context, d *Daemon, n int) error {
	last, lastChange := -1, time.Now()
	for {
		p.mu.Lock()
		got := len(p.at)
		p.mu.Unlock()
		if got >= n {
			return nil
		}
		if err := d.Exited(); err != nil {
			return err
		}
		if got != last {
			last, lastChange = got, time.Now()
		} else if time.Since(lastChange) > time.Minute {
			return fmt.Errorf("no event received for a minute with %d of %d received (see %s)", got, n, d.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the receiver, deletes its subscription (once) and returns
// the times.
func (p *publishTimes) stop() map[uuid.UUID]time.Time {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.b.DeleteSubscription(context.Background(), p.sub)
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at
}

// countGivenUp counts the commits the load generator gave up on (never
// committed: nothing to publish).
func countGivenUp(commits []commit) int {
	n := 0
	for _, c := range commits {
		if c.gaveUp {
			n++
		}
	}
	return n
}

// drainLogOnce measures the log mode's drain of a backlog: a publisher in
// the log mode creates the slot on the empty table and stops (a relay that
// was down), Events rows are written, then one publisher streams them
// from the slot. The rate is from the first message Pub/Sub accepted to
// the last (the strict double counts them: the log mode marks no row).
func (r *Runner) drainLogOnce(ctx context.Context, bin string, b *Backend, run int) error {
	cfg := r.cfg
	if err := r.db.reset(ctx); err != nil {
		return err
	}
	if err := r.db.resetLog(ctx); err != nil {
		return err
	}
	defer r.db.resetLog(context.WithoutCancel(ctx)) //nolint:errcheck // the next log step resets it again, and fails if it cannot
	if err := b.EnsureTopic(ctx, events.Topic); err != nil {
		return err
	}
	start := func(name string) (*Daemon, error) {
		port, err := relaytest.FreePort()
		if err != nil {
			return nil, err
		}
		return startDaemon(bin, name, cfg.RepoDir, r.workDir("logs"), append(r.publisherEnv(b, name, port), r.db.logEnv()...))
	}
	d, err := start(fmt.Sprintf("publisher-%s-log-slot-r%d", b.Name, run))
	if err != nil {
		return err
	}
	err = r.db.waitStreamed(ctx, d)
	if stopErr := d.Stop(30 * time.Second); err == nil && stopErr != nil {
		err = fmt.Errorf("%s: exit: %w (log %s)", d.Name, stopErr, d.LogPath)
	}
	if err != nil {
		return err
	}
	if err := NewFixture(cfg.Aggregates).Seed(ctx, r.db, cfg.Events); err != nil {
		return err
	}
	if err := analyze(ctx, r.db); err != nil {
		return err
	}
	sentBefore := b.Double.Stats()
	a := r.cpu.sample()
	if d, err = start(fmt.Sprintf("publisher-%s-log-i1-r%d", b.Name, run)); err != nil {
		return err
	}
	r.cpu.daemons = map[int]string{d.Pid(): "publisher"}
	first, last, err := waitPublished(ctx, b, sentBefore, d, cfg.Events)
	use := a.to(r.cpu.sample())
	r.cpu.daemons = nil
	cost := costSince(b, sentBefore, cfg.Events, cpuSecondsOf(use, "publisher"), "publisher")
	peak := d.PeakRSS()
	if stopErr := d.Stop(30 * time.Second); err == nil && stopErr != nil {
		err = fmt.Errorf("%s: exit: %w (log %s)", d.Name, stopErr, d.LogPath)
	}
	if err != nil {
		return err
	}
	id := "drain." + b.Name + ".log.i1"
	ev := float64(cfg.Events) / last.Sub(first).Seconds()
	r.addRun(Measurement{ID: id, Scenario: "drain",
		Name:    fmt.Sprintf("publisher drain of %d rows over %d aggregates, log mode (from its slot), 1 instance, bulk %d", cfg.Events, cfg.Aggregates, cfg.Bulk),
		Backend: b.Name, Unit: "events/s", Note: cost.String() + "; " + use.String()}, ev)
	cost.record(r, id, "publisher drain, log mode, 1 instance", b.Name)
	r.recordDrainPostgres(id, "log mode", b.Name, use, cfg.Events)
	r.addRun(Measurement{ID: "memory.publisher.log." + b.Name, Scenario: "memory",
		Name: "publisher, log mode (" + b.Name + ", drain)", Backend: b.Name, Unit: "MB"}, peak)
	r.logf("  run %d: drain %s, log mode x1: %.0f events/s, peak RSS %.0f MB; %s; %s", run, b.Name, ev, peak, cost, use)
	return nil
}

// recordDrainPostgres records the Postgres CPU a drain took per 1,000
// events (the server's processes over the drain: every statement is the
// relay's, no writer runs).
func (r *Runner) recordDrainPostgres(id, mode, backend string, use cpuUse, events int) {
	if r.cpu.postmaster == 0 {
		return
	}
	r.addRun(Measurement{ID: id + ".pg-cpu-per-1k", Scenario: "drain",
		Name:    "publisher drain, " + mode + ", 1 instance: Postgres CPU per 1,000 events",
		Backend: backend, Unit: "CPU s / 1k events"}, cpuSecondsOf(use, "postgres")/float64(events)*1000)
}

// waitPublished waits until the double passed n more messages than
// before, and returns when the first and the n-th passed (within its
// 10 ms polls). It fails when the publisher exits or a minute passes
// without progress.
func waitPublished(ctx context.Context, b *Backend, before strictpubsub.Stats, d *Daemon, n int) (first, last time.Time, err error) {
	prev, lastChange := int64(-1), time.Now()
	for {
		got := b.Double.Stats().PublishMessages - before.PublishMessages
		now := time.Now()
		if got > 0 && first.IsZero() {
			first = now
		}
		if got >= int64(n) {
			return first, now, nil
		}
		if err := d.Exited(); err != nil {
			return first, now, err
		}
		if got != prev {
			prev, lastChange = got, now
		} else if now.Sub(lastChange) > time.Minute {
			return first, now, fmt.Errorf("no progress for a minute with %d of %d messages published (see %s)", got, n, d.LogPath)
		}
		select {
		case <-ctx.Done():
			return first, now, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// logTakeover measures the log reader's takeover after kill -9: two
// log-mode publishers, the first started alone until it streams the slot
// (the reader), the second its standby; the reader is SIGKILLed and the
// time until the slot is streamed by another walsender is recorded
// (takeover.log.kill9). The reader is killed once its recovery of the
// drain's rows is recorded, streaming. Postgres ends a killed process's
// sessions at once (its kernel closes the sockets); the standby retries
// every second.
func (r *Runner) logTakeover(ctx context.Context, bin string, b *Backend, run int) error {
	if err := r.db.resetLog(ctx); err != nil {
		return err
	}
	defer r.db.resetLog(context.WithoutCancel(ctx)) //nolint:errcheck // the next log step resets it again, and fails if it cannot
	var ds []*Daemon
	defer func() {
		for _, d := range ds {
			_ = d.Stop(30 * time.Second)
		}
	}()
	for i := range 2 {
		port, err := relaytest.FreePort()
		if err != nil {
			return err
		}
		name := fmt.Sprintf("publisher-%s-log-takeover-%d-r%d", b.Name, i, run)
		d, err := startDaemon(bin, name, r.cfg.RepoDir, r.workDir("logs"), append(r.publisherEnv(b, name, port), r.db.logEnv()...))
		if err != nil {
			return err
		}
		ds = append(ds, d)
		if err := waitReady(ctx, d, "127.0.0.1:"+strconv.Itoa(port)); err != nil {
			return err
		}
		if i == 0 {
			if err := r.db.waitStreamed(ctx, d); err != nil {
				return err
			}
			// A reader killed during its recovery leaves the slot
			// unrecovered: its successor republishes the whole table
			// again first (the drain's rows, here), which is a recovery's
			// time, not a takeover's.
			if err := r.db.waitRecovered(ctx, d); err != nil {
				return err
			}
		}
	}
	// The first holds the reader's lock; its walsender is the slot's
	// whenever a session runs (between two, the slot is briefly idle).
	var walsender *int32
	for walsender == nil {
		if err := r.db.Pool.QueryRow(ctx, `SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1`, r.db.logSlot()).Scan(&walsender); err != nil {
			return fmt.Errorf("reading the slot's walsender: %w", err)
		}
		if err := ds[0].Exited(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := ds[0].cmd.Process.Kill(); err != nil {
		return err
	}
	killed := time.Now()
	for {
		n, err := r.db.count(ctx, `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active AND active_pid <> $2`, r.db.logSlot(), *walsender)
		if err != nil {
			return err
		}
		if n > 0 {
			break
		}
		if err := ds[1].Exited(); err != nil {
			return err
		}
		if time.Since(killed) > 2*time.Minute {
			return fmt.Errorf("no standby streamed slot %s 2 minutes after its reader was killed (log %s)", r.db.logSlot(), ds[1].LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	took := time.Since(killed)
	r.addRun(Measurement{ID: "takeover.log.kill9", Scenario: "drain",
		Name:    "log mode: kill -9 of the slot's reader until its standby streams the slot (2 publishers, " + b.Name + ")",
		Backend: b.Name, Unit: "s"}, took.Seconds())
	r.logf("  run %d: log reader kill -9 on %s: the standby streamed the slot %s later", run, b.Name, took.Round(time.Millisecond))
	return nil
}
