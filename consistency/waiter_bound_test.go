package consistency_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/consistency"
)

// TestWaitBoundsItsLookups: a look-up that does not answer (a read model
// or a connection pool that is stuck) ends with the wait, as ErrTimeout.
func TestWaitBoundsItsLookups(t *testing.T) {
	t.Parallel()
	w := consistency.NewWaiter(nil, consistency.WaiterOptions{DefaultWait: 100 * time.Millisecond})
	w.Register("stuck", func(ctx context.Context, _, _ string) (int64, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	start := time.Now()
	err := w.Wait(t.Context(), "stuck", []consistency.Token{{AggregateType: "item", AggregateID: "a", AggregateVersion: 1}}, 0)
	if !errors.Is(err, consistency.ErrTimeout) {
		t.Fatalf("Wait = %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Wait took %s with a 100ms bound", d)
	}
}
