package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
)

// notificationCounter LISTENs on the outbox's wake-up channel and counts
// the notifications the writers send: how often coalesced writers still
// wake a busy relay is a cost of the writers' transactions, measured here
// rather than asserted in a unit test.
type notificationCounter struct {
	conn   *pgx.Conn
	n      atomic.Int64
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// countNotifications starts counting the notifications on schema's
// channel; Stop returns the count.
func countNotifications(ctx context.Context, url, schema string) (*notificationCounter, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connecting the notification counter: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{outbox.NotifyChannelFor(schema)}.Sanitize()); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("listening for wake-ups: %w", err)
	}
	lctx, cancel := context.WithCancel(ctx)
	c := &notificationCounter{conn: conn, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			if _, err := conn.WaitForNotification(lctx); err != nil {
				return
			}
			c.n.Add(1)
		}
	}()
	return c, nil
}

// Stop ends the count and returns it; later calls return the same count.
func (c *notificationCounter) Stop() int64 {
	c.once.Do(func() {
		c.cancel()
		<-c.done
		c.conn.Close(context.Background())
	})
	return c.n.Load()
}
