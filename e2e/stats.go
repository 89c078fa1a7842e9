package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/e2e/e2edb"
	"github.com/eventrelay/eventrelay/relay"
)

// Stats reads a run's progress straight from Postgres.
type Stats struct {
	Pool *pgxpool.Pool
	q    *e2edb.Queries
	// LogMode: the publishers read a replication slot and leave every row
	// pending, so the table does not say what is published; settled then
	// means every committed event applied by every consumer.
	LogMode bool
}

// OpenStats opens a small pool on the run's database.
func OpenStats(ctx context.Context, url, schema string) (*Stats, error) {
	pc, err := relay.PoolConfig(url, schema)
	if err != nil {
		return nil, fmt.Errorf("opening stats pool: %w", err)
	}
	pc.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("opening stats pool: %w", err)
	}
	return &Stats{Pool: pool, q: e2edb.New(pool)}, nil
}

// Close closes the pool.
func (s *Stats) Close() { s.Pool.Close() }

// Snapshot is the state of the pipeline at one instant.
type Snapshot struct {
	At     time.Time
	Outbox e2edb.OutboxProgressRow
	// Applied counts inbox rows per consumer.
	Applied map[string]int64
}

// MinApplied is the smallest applied count over the consumers (0 if none).
func (s Snapshot) MinApplied() int64 {
	first := true
	var m int64
	for _, v := range s.Applied {
		if first || v < m {
			m, first = v, false
		}
	}
	return m
}

// Snapshot reads the current counts.
func (s *Stats) Snapshot(ctx context.Context) (Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	snap := Snapshot{At: time.Now(), Applied: map[string]int64{}}
	var err error
	if snap.Outbox, err = s.q.OutboxProgress(ctx); err != nil {
		return snap, fmt.Errorf("reading outbox progress: %w", err)
	}
	rows, err := s.q.InboxProgress(ctx)
	if err != nil {
		return snap, fmt.Errorf("reading inbox progress: %w", err)
	}
	for _, r := range rows {
		snap.Applied[r.Consumer] = r.Applied
	}
	return snap, nil
}

// Source reads the source-of-truth totals.
func (s *Stats) Source(ctx context.Context) (e2edb.SourceTotalsRow, error) {
	r, err := s.q.SourceTotals(ctx)
	if err != nil {
		return r, fmt.Errorf("reading source totals: %w", err)
	}
	return r, nil
}

// Latency reads commit-to-projected percentiles for consumer.
func (s *Stats) Latency(ctx context.Context, consumer string) (e2edb.CommitToProjectedRow, error) {
	r, err := s.q.CommitToProjected(ctx, consumer)
	if err != nil {
		return r, fmt.Errorf("reading latency of %s: %w", consumer, err)
	}
	return r, nil
}

// Unapplied lists up to max committed events consumer has not applied and
// counts them all.
func (s *Stats) Unapplied(ctx context.Context, consumer string, max int32) ([]e2edb.UnappliedEventsRow, int64, error) {
	n, err := s.q.CountUnapplied(ctx, consumer)
	if err != nil {
		return nil, 0, fmt.Errorf("counting unapplied events of %s: %w", consumer, err)
	}
	rows, err := s.q.UnappliedEvents(ctx, e2edb.UnappliedEventsParams{Consumer: consumer, MaxRows: max})
	if err != nil {
		return nil, 0, fmt.Errorf("listing unapplied events of %s: %w", consumer, err)
	}
	return rows, n, nil
}

// WaitSettled polls until every committed event is published and applied
// by every consumer in consumers (or nothing changed for quiet and the
// outbox has no lag), or until timeout. It returns the last snapshot.
func (s *Stats) WaitSettled(ctx context.Context, consumers []string, timeout time.Duration) (Snapshot, error) {
	var last Snapshot
	err := poll(ctx, 500*time.Millisecond, timeout, func() (bool, string) {
		snap, err := s.Snapshot(ctx)
		if err != nil {
			return false, err.Error()
		}
		last = snap
		if s.LogMode {
			return s.allApplied(ctx, consumers)
		}
		done := snap.Outbox.Lag == 0
		for _, c := range consumers {
			if snap.Applied[c] < snap.Outbox.Published {
				done = false
			}
		}
		return done, fmt.Sprintf("lag %d, published %d, applied %v", snap.Outbox.Lag, snap.Outbox.Published, snap.Applied)
	})
	if err != nil {
		return last, fmt.Errorf("not settled: %w", err)
	}
	return last, nil
}

// allApplied reports whether every consumer applied every committed event.
func (s *Stats) allApplied(ctx context.Context, consumers []string) (bool, string) {
	unapplied := map[string]int64{}
	done := true
	for _, c := range consumers {
		n, err := s.q.CountUnapplied(ctx, c)
		if err != nil {
			return false, err.Error()
		}
		unapplied[c] = n
		done = done && n == 0
	}
	return done, fmt.Sprintf("committed events not applied %v", unapplied)
}

// Outstanding counts the events consumer has not applied that the
// publishers are done with: published ones in the poll mode; in the log
// mode, where the table does not say, every committed one (with the
// publishers running and caught up: the dead letters).
func (s *Stats) Outstanding(ctx context.Context, consumer string) (int64, error) {
	if !s.LogMode {
		return s.PublishedUnapplied(ctx, consumer)
	}
	n, err := s.q.CountUnapplied(ctx, consumer)
	if err != nil {
		return 0, fmt.Errorf("counting unapplied events of %s: %w", consumer, err)
	}
	return n, nil
}

// PublishedUnapplied counts published events consumer has not applied.
func (s *Stats) PublishedUnapplied(ctx context.Context, consumer string) (int64, error) {
	n, err := s.q.CountPublishedUnapplied(ctx, consumer)
	if err != nil {
		return 0, fmt.Errorf("counting published unapplied events of %s: %w", consumer, err)
	}
	return n, nil
}

// OldEvents samples up to n published events older than their aggregate's
// current version.
func (s *Stats) OldEvents(ctx context.Context, n int32) ([]uuid.UUID, error) {
	ids, err := s.q.OldPublishedEvents(ctx, n)
	if err != nil {
		return nil, fmt.Errorf("sampling old events: %w", err)
	}
	return ids, nil
}

// ForgetInbox deletes every consumer's inbox rows of ids (simulated inbox
// retention) and returns how many rows went.
func (s *Stats) ForgetInbox(ctx context.Context, ids []uuid.UUID) (int64, error) {
	n, err := s.q.ForgetInboxEvents(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("forgetting inbox rows: %w", err)
	}
	return n, nil
}

// StuckReport describes what a drain is waiting for: the rows publishers
// hold and, per consumer, the oldest committed events without an inbox
// row. It is printed when a wait times out, so a failed run says which
// events stalled where.
func (s *Stats) StuckReport(ctx context.Context, consumers []string) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var b strings.Builder
	held, err := s.q.PublishingEvents(ctx, 5)
	if err != nil {
		fmt.Fprintf(&b, "\n  rows being published: unreadable (%v)", err)
	}
	for _, r := range held {
		fmt.Fprintf(&b, "\n  publishing: row %d %s v%d locked by %s, lease until %s, attempts %d",
			r.ID, r.AggregateID, r.AggregateVersion, r.LockedBy.String, r.LeaseUntil.Time.Format(time.RFC3339Nano), r.Attempts)
	}
	for _, c := range consumers {
		rows, n, err := s.Unapplied(ctx, c, 5)
		if err != nil {
			fmt.Fprintf(&b, "\n  %s: unreadable (%v)", c, err)
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %d committed events not applied", c, n)
		for _, r := range rows {
			published := "never"
			if r.PublishedAt.Valid {
				published = time.Since(r.PublishedAt.Time).Truncate(time.Millisecond).String() + " ago"
			}
			fmt.Fprintf(&b, "\n    %s %s v%d (%s, %s), published %s", r.EventID, r.AggregateID, r.AggregateVersion, r.Status, r.Origin, published)
		}
	}
	return b.String()
}

// HeldBy counts the rows worker holds (claimed by it, not settled yet).
func (s *Stats) HeldBy(ctx context.Context, worker string) (int, error) {
	rows, err := s.q.PublishingEvents(ctx, 100000)
	if err != nil {
		return 0, fmt.Errorf("reading rows being published: %w", err)
	}
	n := 0
	for _, r := range rows {
		if r.LockedBy.String == worker {
			n++
		}
	}
	return n, nil
}
