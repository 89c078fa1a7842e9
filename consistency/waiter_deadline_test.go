package consistency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/consistency"
)

// TestWaitEndsAsATimeoutAtTheCallersDeadline: a wait as long as the
// caller's own deadline (a request timeout equal to MaxWait) or longer
// ends with ErrTimeout, the read model's answer, not with the caller's
// context error; a look-up stuck at that deadline too. A cancelled caller
// still gets its context's error.
func TestWaitEndsAsATimeoutAtTheCallersDeadline(t *testing.T) {
	t.Parallel()
	w := consistency.NewWaiter(nil, consistency.WaiterOptions{DefaultWait: 200 * time.Millisecond, MaxWait: 400 * time.Millisecond})
	w.Register("behind", func(context.Context, string, string) (int64, error) { return 0, nil })
	w.Register("stuck", func(ctx context.Context, _, _ string) (int64, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	tokens := []consistency.Token{{AggregateType: "item", AggregateID: "a", AggregateVersion: 1}}
	for _, c := range []struct {
		model    string
		deadline time.Duration
		wait     time.Duration
	}{
		{"behind", 400 * time.Millisecond, 400 * time.Millisecond},
		{"behind", 300 * time.Millisecond, time.Hour},
		{"stuck", 400 * time.Millisecond, 0},
		{"stuck", 200 * time.Millisecond, 400 * time.Millisecond},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), c.deadline)
		err := w.Wait(ctx, c.model, tokens, c.wait)
		cancel()
		if !errors.Is(err, consistency.ErrTimeout) {
			t.Errorf("%s read model, wait %s, caller's deadline in %s: Wait = %v; want ErrTimeout", c.model, c.wait, c.deadline, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := w.Wait(ctx, "behind", tokens, 0); !errors.Is(err, context.Canceled) || errors.Is(err, consistency.ErrTimeout) {
		t.Errorf("cancelled caller: Wait = %v; want context.Canceled", err)
	}
}
