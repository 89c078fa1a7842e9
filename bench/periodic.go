package bench

import (
	"context"
	"sync"
	"time"
)

// periodic runs a function every interval on a goroutine of its own until
// it is stopped or the function fails.
type periodic struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	err error // the function's error, unless the loop was stopped first
}

// runEvery starts calling fn every interval (the first call one interval
// from now).
func runEvery(ctx context.Context, interval time.Duration, fn func(context.Context) error) *periodic {
	ctx, cancel := context.WithCancel(ctx)
	p := &periodic{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := fn(ctx); err != nil {
				if ctx.Err() == nil {
					p.mu.Lock()
					p.err = err
					p.mu.Unlock()
				}
				return
			}
		}
	}()
	return p
}

// failed returns the error that ended the loop, if one did.
func (p *periodic) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// stop ends the loop, waits for it, and returns what failed() does.
func (p *periodic) stop() error {
	p.cancel()
	<-p.done
	return p.failed()
}
