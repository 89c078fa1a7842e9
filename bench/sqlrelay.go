package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// sqlRelay is the database half of a publisher run on its own: every
// cooldown it claims up to bulk rows with the publisher's own queries
// (publisherClaimer) and marks them published at once, with no Pub/Sub and
// no publisher process. The cost scenario runs it next to the daemon to
// tell the relay's work in the writers' database (these statements) from
// the rest of what a publisher costs on a machine it shares with them (its
// own process, the Pub/Sub double, their wake-ups).
type sqlRelay struct {
	loop *periodic

	mu                    sync.Mutex
	nonEmpty, empty, rows int // claims that returned rows, claims that did not, rows claimed and marked
}

// startSQLRelay starts the loop; Stop ends it.
func startSQLRelay(ctx context.Context, c claimer, cooldown time.Duration, bulk int) *sqlRelay {
	s := &sqlRelay{}
	s.loop = runEvery(ctx, cooldown, func(ctx context.Context) error { return s.cycle(ctx, c, bulk) })
	return s
}

// cycle claims one batch and marks it published.
func (s *sqlRelay) cycle(ctx context.Context, c claimer, bulk int) error {
	ids, token, err := c.Claim(ctx, "bench-sql-relay", bulk)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		if err := c.MarkPublished(ctx, ids, token); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ids) == 0 {
		s.empty++
	} else {
		s.nonEmpty++
		s.rows += len(ids)
	}
	return nil
}

// waitPublished waits until n rows were published (or the loop failed, or
// timeout passed).
func (s *sqlRelay) waitPublished(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		got := s.rows
		s.mu.Unlock()
		err := s.loop.failed()
		switch {
		case err != nil:
			return fmt.Errorf("sql relay: %w", err)
		case got >= n:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("sql relay: %d of %d events published after %v", got, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Stop ends the loop and waits for it.
func (s *sqlRelay) Stop() { _ = s.loop.stop() } // a failure was reported by waitPublished
