package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Slot is what pg_replication_slots says of the log mode's slot.
type Slot struct {
	Exists, Active bool
	ActivePID      int
	WALStatus      string
}

func (s Slot) String() string {
	if !s.Exists {
		return "missing"
	}
	return fmt.Sprintf("active %t (walsender %d), wal_status %s", s.Active, s.ActivePID, s.WALStatus)
}

// Slot reads the log mode's slot.
func (s *Stack) Slot(ctx context.Context) (Slot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var sl Slot
	var pid *int32
	var wal *string
	err := s.Stats.Pool.QueryRow(ctx, `SELECT active, active_pid, wal_status FROM pg_replication_slots WHERE slot_name = $1`, LogSlot).
		Scan(&sl.Active, &pid, &wal)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return sl, nil
	case err != nil:
		return sl, fmt.Errorf("reading slot %s: %w", LogSlot, err)
	}
	sl.Exists = true
	if pid != nil {
		sl.ActivePID = int(*pid)
	}
	if wal != nil {
		sl.WALStatus = *wal
	}
	return sl, nil
}

// streamed waits until the slot exists, is not lost and is streamed by a
// walsender other than notPID, and returns how long that took.
func (s *Stack) streamed(ctx context.Context, notPID int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := poll(ctx, 50*time.Millisecond, timeout, func() (bool, string) {
		sl, err := s.Slot(ctx)
		if err != nil {
			return false, err.Error()
		}
		return sl.Active && sl.ActivePID != notPID && sl.WALStatus != "lost", "slot " + sl.String()
	})
	return time.Since(start), err
}

// reader is the publisher that reads the slot (its outbox_log_reader
// gauge says active), once the slot is streamed.
func (s *Stack) reader(ctx context.Context, timeout time.Duration) (*Proc, Slot, error) {
	var found *Proc
	var sl Slot
	err := poll(ctx, 100*time.Millisecond, timeout, func() (bool, string) {
		s.Scraper.ScrapeAll(ctx)
		found = nil
		var state []string
		for _, p := range s.Publishers {
			a := s.Scraper.Last(p.Name(), "outbox_log_reader", "state=active")
			state = append(state, fmt.Sprintf("%s active %v", p.Name(), a))
			if a == 1 && p.Running() {
				found = p
			}
		}
		var err error
		if sl, err = s.Slot(ctx); err != nil {
			return false, err.Error()
		}
		return found != nil && sl.Active, strings.Join(state, ", ") + "; slot " + sl.String()
	})
	if err != nil {
		return nil, sl, fmt.Errorf("finding the slot's reader: %w", err)
	}
	return found, sl, nil
}

// ReaderTakeover is what happened when the slot's reader was SIGKILLed
// while a standby ran.
type ReaderTakeover struct {
	Killed, Took string // the reader killed; the standby that took over
	// Takeover is the time from the SIGKILL until the slot was streamed
	// again by another walsender.
	Takeover time.Duration
}

// KillReader SIGKILLs the publisher reading the slot mid-stream, measures
// how long the standby takes to stream the slot again, then starts the
// killed one again (it becomes the standby).
func (s *Stack) KillReader(ctx context.Context, log *FaultLog) (ReaderTakeover, error) {
	var res ReaderTakeover
	p, sl, err := s.reader(ctx, time.Minute)
	if err != nil {
		return res, err
	}
	res.Killed = p.Name()
	release := p.Hold()
	defer release()
	p.Kill()
	killed := time.Now()
	log.PublisherKills.Add(1)
	s.Sup.Logf("fault: SIGKILL %s, the slot's reader (walsender %d), mid-stream", p.Name(), sl.ActivePID)
	if _, err := s.streamed(ctx, sl.ActivePID, 2*time.Minute); err != nil {
		return res, fmt.Errorf("no standby took the slot over after %s was killed: %w", p.Name(), err)
	}
	res.Takeover = time.Since(killed)
	if q, _, err := s.reader(ctx, 30*time.Second); err == nil {
		res.Took = q.Name()
	}
	s.Sup.Logf("fault: %s took the slot over %s after the SIGKILL", res.Took, res.Takeover.Round(time.Millisecond))
	if err := p.Start(); err != nil {
		return res, err
	}
	return res, p.WaitReady(context.WithoutCancel(ctx), time.Minute)
}

// SlotDrop is what happened when the slot was dropped mid-run.
type SlotDrop struct {
	// Resumed is the time from the drop until a new slot was streamed.
	Resumed time.Duration
	// Terminated counts the walsenders ended to let the drop through (the
	// reader reconnects within its backoff).
	Terminated int
}

// DropSlot drops the slot while it is read: the reader's walsender is
// terminated (a streamed slot cannot be dropped) and the slot dropped
// before the reader is back. The reader must create a new slot and
// republish what is not known to be published.
func (s *Stack) DropSlot(ctx context.Context) (SlotDrop, error) {
	var res SlotDrop
	if _, _, err := s.reader(ctx, time.Minute); err != nil {
		return res, err
	}
	var dropErr error
	for try := 0; try < 100; try++ {
		var ended int
		// pg_terminate_backend waits (up to 5 s) for the walsender to exit.
		if err := s.Stats.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(active_pid, 5000))
			FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL`, LogSlot).Scan(&ended); err != nil {
			return res, fmt.Errorf("terminating the walsender of slot %s: %w", LogSlot, err)
		}
		res.Terminated += ended
		if _, dropErr = s.Stats.Pool.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, LogSlot); dropErr == nil {
			break
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return res, err
		}
	}
	if dropErr != nil {
		return res, fmt.Errorf("dropping slot %s: %w", LogSlot, dropErr)
	}
	dropped := time.Now()
	s.Sup.Logf("fault: slot %s dropped mid-run (%d walsender(s) terminated first)", LogSlot, res.Terminated)
	if _, err := s.streamed(ctx, 0, 2*time.Minute); err != nil {
		return res, fmt.Errorf("no new slot after %s was dropped: %w", LogSlot, err)
	}
	res.Resumed = time.Since(dropped)
	s.Sup.Logf("fault: a new slot %s is streamed %s after the drop", LogSlot, res.Resumed.Round(time.Millisecond))
	return res, nil
}

// SlotInvalidation is what happened when the relay was down long enough
// for its slot to be invalidated.
type SlotInvalidation struct {
	Written  int   // writes made while the relay was down
	WALBytes int64 // WAL generated meanwhile
	// Lost: the slot's wal_status was 'lost' before the relay came back.
	Lost bool
	// Resumed is the time from the publishers' start until a new slot was
	// streamed.
	Resumed time.Duration
}

// InvalidateSlot stops every publisher (SIGTERM), writes while they are
// down, lowers max_slot_wal_keep_size and generates WAL until Postgres
// invalidates the slot (wal_status 'lost'), restores the setting and
// starts the publishers: they must replace the slot and republish the
// rows not known to be published.
func (s *Stack) InvalidateSlot(ctx context.Context, write func(context.Context) int, log *FaultLog) (SlotInvalidation, error) {
	var res SlotInvalidation
	for _, p := range s.Publishers {
		defer p.Hold()()
	}
	s.Scraper.ScrapeAll(ctx)
	for _, p := range s.Publishers {
		if err := p.Stop(); err != nil {
			s.Sup.Logf("fault: %s: graceful stop: %v", p.Name(), err)
			log.unclean(fmt.Sprintf("%s: %v", p.Name(), exitText(err)))
		}
		log.GracefulRestarts.Add(1)
	}
	s.Sup.Logf("fault: every publisher stopped; writing, then generating WAL past max_slot_wal_keep_size")
	for i := 0; i < 3; i++ {
		res.Written += write(ctx)
	}
	lost, walBytes, err := s.generateWALUntilLost(ctx)
	res.WALBytes = walBytes
	if err != nil {
		return res, err
	}
	res.Lost = lost
	s.Sup.Logf("fault: slot %s invalidated: %t (%d MB of WAL generated)", LogSlot, lost, walBytes>>20)
	started := time.Now()
	for _, p := range s.Publishers {
		if err := p.Start(); err != nil {
			return res, err
		}
	}
	for _, p := range s.Publishers {
		if err := p.WaitReady(ctx, time.Minute); err != nil {
			return res, err
		}
	}
	if _, err := s.streamed(ctx, 0, 2*time.Minute); err != nil {
		return res, fmt.Errorf("no new slot after %s was invalidated: %w", LogSlot, err)
	}
	res.Resumed = time.Since(started)
	s.Sup.Logf("fault: a new slot %s is streamed %s after the publishers' start", LogSlot, res.Resumed.Round(time.Millisecond))
	return res, nil
}

// generateWALUntilLost sets max_slot_wal_keep_size to 1MB, writes a
// filler table, switches WAL segments and checkpoints until the slot is
// lost (at most a minute), and restores the setting. Superuser: the
// harness is the cluster's owner.
func (s *Stack) generateWALUntilLost(ctx context.Context) (lost bool, walBytes int64, err error) {
	pool := s.Stats.Pool
	exec := func(sql string) error {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
		return nil
	}
	if err := exec(`ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'`); err != nil {
		return false, 0, err
	}
	defer func() {
		rctx := context.WithoutCancel(ctx)
		if _, rerr := pool.Exec(rctx, `ALTER SYSTEM RESET max_slot_wal_keep_size`); rerr != nil {
			err = errors.Join(err, rerr)
		}
		if _, rerr := pool.Exec(rctx, `SELECT pg_reload_conf()`); rerr != nil {
			err = errors.Join(err, rerr)
		}
		_, _ = pool.Exec(rctx, `DROP TABLE IF EXISTS public.e2e_wal_filler`)
	}()
	if err := exec(`SELECT pg_reload_conf()`); err != nil {
		return false, 0, err
	}
	if err := exec(`CREATE TABLE IF NOT EXISTS public.e2e_wal_filler (n int, pad text)`); err != nil {
		return false, 0, err
	}
	var from string
	if err := pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&from); err != nil {
		return false, 0, err
	}
	err = poll(ctx, 0, time.Minute, func() (bool, string) {
		for _, sql := range []string{
			`INSERT INTO public.e2e_wal_filler SELECT g, repeat(md5(g::text), 30) FROM generate_series(1, 10000) g`,
			`TRUNCATE public.e2e_wal_filler`,
			`SELECT pg_switch_wal()`,
			`CHECKPOINT`,
		} {
			if err := exec(sql); err != nil {
				return false, err.Error()
			}
		}
		sl, err := s.Slot(ctx)
		if err != nil {
			return false, err.Error()
		}
		lost = sl.WALStatus == "lost"
		return lost, "slot " + sl.String()
	})
	_ = pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`, from).Scan(&walBytes)
	return lost, walBytes, err
}

// PubSubOutage is what happened while Pub/Sub was down under the log
// mode's publishers.
type PubSubOutage struct {
	Written  int           // writes made while it was down
	Down     time.Duration // how long it was down
	Held     string        // a publisher's readiness naming the hold
	Resumed  time.Duration // from its return until every publisher was ready
	Restarts int
}

// PubSubOutageLive stops the Pub/Sub server under running publishers (the
// caller settled the pipeline first: the emulator keeps nothing across a
// restart, so nothing may be in flight), writes while it is down, keeps it
// down for down, then brings an empty server back with its resources:
// the publishers are frozen while `relayctl pubsub ensure` runs, so none
// publishes to a topic without its subscriptions. They must have held the
// stream (readiness) and resume by themselves.
func (s *Stack) PubSubOutageLive(ctx context.Context, chk *OrderChecker, down time.Duration, write func(context.Context) int, log *FaultLog) (PubSubOutage, error) {
	var res PubSubOutage
	for _, p := range s.Publishers {
		defer p.Hold()()
	}
	chk.Suspend()
	defer chk.Resume()
	if err := s.PubSub.Stop(ctx); err != nil {
		return res, err
	}
	gone := time.Now()
	log.PubSubRestarts.Add(1)
	s.Sup.Logf("fault: Pub/Sub stopped under running publishers for %s", down)
	res.Written = write(ctx)
	_ = poll(ctx, 250*time.Millisecond, down+30*time.Second, func() (bool, string) {
		for _, p := range s.Publishers {
			if r := p.readiness(ctx); r != "" && !strings.HasPrefix(r, "200") {
				res.Held = p.Name() + ": " + r
				return true, ""
			}
		}
		return false, "every publisher still ready"
	})
	if err := sleepCtx(ctx, time.Until(gone.Add(down))); err != nil {
		return res, err
	}
	for _, p := range s.Publishers {
		if err := p.Pause(); err != nil {
			return res, err
		}
	}
	startErr := s.PubSub.Start(ctx)
	if startErr == nil {
		startErr = s.EnsurePubSub(ctx)
	}
	res.Down = time.Since(gone)
	if startErr == nil {
		chk.Resume()
	}
	for _, p := range s.Publishers {
		_ = p.Resume()
	}
	if startErr != nil {
		return res, startErr
	}
	back := time.Now()
	for _, p := range s.Publishers {
		if err := p.WaitReady(ctx, 2*time.Minute); err != nil {
			return res, err
		}
	}
	res.Resumed = time.Since(back)
	s.Sup.Logf("fault: Pub/Sub back after %s; every publisher ready %s later", res.Down.Round(time.Millisecond), res.Resumed.Round(time.Millisecond))
	return res, nil
}

// publishing are the publishers that publish (after a scrape): every one
// in the poll mode; in the log mode the slot's reader alone (a standby
// publishes nothing).
func (s *Stack) publishing() []*Proc {
	if !s.Cfg.LogMode {
		return s.Publishers
	}
	var out []*Proc
	for _, p := range s.Publishers {
		if s.Scraper.Last(p.Name(), "outbox_log_reader", "state=active") == 1 {
			out = append(out, p)
		}
	}
	return out
}
