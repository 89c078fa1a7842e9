package data

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
)

// Listener is biz.Wakeup on LISTEN of the outbox's channel (by default
// outbox.NotifyChannelFor the schema) over a dedicated connection,
// reconnecting with backoff when it breaks. Disabled it only waits: the
// relay polls.
type Listener struct {
	conn    *pgx.ConnConfig
	listen  string // the LISTEN statement
	enabled bool
	log     *slog.Logger
}

var _ biz.Wakeup = (*Listener)(nil)

// NewListener returns a Listener on channel using pool's connection
// settings; enabled false makes it only wait.
func NewListener(pool *pgxpool.Pool, channel string, enabled bool, log *slog.Logger) *Listener {
	// LISTEN takes an identifier, not a parameter, so it cannot be a sqlc
	// query; the channel is quoted as an identifier.
	return &Listener{
		conn:    pool.Config().ConnConfig.Copy(),
		listen:  "LISTEN " + pgx.Identifier{channel}.Sanitize(),
		enabled: enabled, log: log,
	}
}

// Listen implements biz.Wakeup.
func (l *Listener) Listen(ctx context.Context, wake func()) {
	if !l.enabled {
		<-ctx.Done()
		return
	}
	retry := biz.Backoff{Base: 200 * time.Millisecond, Max: 10 * time.Second}
	failures := int32(0)
	for ctx.Err() == nil {
		started := time.Now()
		err := l.session(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			failures = 0
		}
		delay := retry.Delay(failures)
		failures++
		l.log.Warn("outbox LISTEN connection lost; polling until it is back", "error", err, "retry_in_ms", delay.Milliseconds())
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// session listens on one connection until it fails.
func (l *Listener) session(ctx context.Context, wake func()) error {
	conn, err := pgx.ConnectConfig(ctx, l.conn)
	if err != nil {
		return fmt.Errorf("connecting for LISTEN: %w", postgres.Classify(err))
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, l.listen); err != nil {
		return fmt.Errorf("LISTEN: %w", postgres.Classify(err))
	}
	wake() // notifications may have been missed while disconnected
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("waiting for notifications: %w", postgres.Classify(err))
		}
		wake()
	}
}
