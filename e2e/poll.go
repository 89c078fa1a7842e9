package e2e

import (
	"context"
	"fmt"
	"time"
)

// poll calls check every interval until it reports done, ctx ends or
// timeout passes; the timeout error carries what check last reported.
func poll(ctx context.Context, every, timeout time.Duration, check func() (done bool, state string)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, state := check()
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, state)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
