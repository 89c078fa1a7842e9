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
	stop context.CancelFunc
	done chan struct{}

	mu                    sync.Mutex
	nonEmpty, empty, rows int // claims that returned rows, claims that did not, rows claimed and marked
	err                   error
}

// startSQLRelay starts the loop; Stop ends it.
func startSQLRelay(ctx context.Context, c claimer, cooldown time.Duration, bulk int) *sqlRelay {
	ctx, stop := context.WithCancel(ctx)
	s := &sqlRelay{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(cooldown)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := s.cycle(ctx, c, bulk); err != nil {
				if ctx.Err() == nil {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				return
			}
		}
	}()
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
		got, err := s.rows, s.err
		s.mu.Unlock()
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
func (s *sqlRelay) Stop() {
	s.stop()
	<-s.done
}
