package wakeup

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/relay/internal/backoff"
)

// PartitionsChanged is the NOTIFY payload of AnnouncePartitions; writers
// notify with an empty payload.
const PartitionsChanged = "partitions"

// Listener signals that new rows may be ready and tells writers whether
// this relay wants to be notified: LISTEN on the outbox's channel (by default
// outbox.NotifyChannelFor the schema) over a dedicated connection,
// reconnecting with backoff when it breaks, and on this relay's row in
// outbox_wakeups. Disabled it only waits (the relay polls) and keeps no
// row, so writers notify on every commit as before.
type Listener struct {
	pool    *pgxpool.Pool
	conn    *pgx.ConnConfig
	channel string
	listen  string // the LISTEN statement
	enabled bool
	log     *slog.Logger
}

// wakeupStaleAfter is how long a row of outbox_wakeups may go without an
// update before another relay deletes it (its replica died). Relays
// rewrite theirs at least every poll interval while armed and whenever
// their state changes; the relay also refreshes a busy row well within it.
const wakeupStaleAfter = 10 * time.Minute

// NewListener returns a Listener on channel using pool's connection
// settings; enabled false makes it only wait.
func NewListener(pool *pgxpool.Pool, channel string, enabled bool, log *slog.Logger) *Listener {
	// LISTEN takes an identifier, not a parameter, so it cannot be a sqlc
	// query; the channel is quoted as an identifier.
	return &Listener{
		pool:    pool,
		conn:    pool.Config().ConnConfig.Copy(),
		channel: channel,
		listen:  "LISTEN " + pgx.Identifier{channel}.Sanitize(),
		enabled: enabled, log: log,
	}
}

// Want records that relay worker is idle and wants a NOTIFY on each
// commit for the next armedFor, or (armedFor 0) that it is busy and
// claims again by itself. A disabled Listener ignores it.
func (l *Listener) Want(ctx context.Context, worker string, armedFor time.Duration) error {
	if !l.enabled {
		return nil
	}
	err := outboxdb.New(l.pool).SetOutboxWakeup(ctx, outboxdb.SetOutboxWakeupParams{
		WorkerID: worker, Armed: armedFor > 0, TtlSeconds: armedFor.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("recording the wake-up wish: %w", postgres.Classify(err))
	}
	return nil
}

// Unannounced reports whether a writer that read every relay busy (and
// so commits without a NOTIFY) is still in flight; it never waits for one.
// A relay that armed its row claims once more after Unannounced reported
// false. A disabled Listener keeps no row (writers notify on every
// commit) and reports false.
func (l *Listener) Unannounced(ctx context.Context) (bool, error) {
	if !l.enabled {
		return false, nil
	}
	unannounced, err := outboxdb.New(l.pool).OutboxUnannounced(ctx)
	if err != nil {
		return false, fmt.Errorf("looking for unannounced writers: %w", postgres.Classify(err))
	}
	return unannounced, nil
}

// AnnouncePartitions notifies the other relays (payload
// PartitionsChanged) that partitions were released or are wanted, so they
// run their heartbeat at once.
func (l *Listener) AnnouncePartitions(ctx context.Context) error {
	if !l.enabled {
		return nil
	}
	err := outboxdb.New(l.pool).AnnounceOutboxPartitions(ctx, outboxdb.AnnounceOutboxPartitionsParams{
		Channel: l.channel, Payload: PartitionsChanged,
	})
	if err != nil {
		return fmt.Errorf("announcing a partition change: %w", postgres.Classify(err))
	}
	return nil
}

// Leave withdraws worker's wish when it stops: it deletes this relay's row and those of
// relays not seen for wakeupStaleAfter.
func (l *Listener) Leave(ctx context.Context, worker string) error {
	if !l.enabled {
		return nil
	}
	err := outboxdb.New(l.pool).DeleteOutboxWakeup(ctx, outboxdb.DeleteOutboxWakeupParams{
		WorkerID: worker, StaleSeconds: wakeupStaleAfter.Seconds(),
	})
	if err != nil {
		return fmt.Errorf("withdrawing the wake-up wish: %w", postgres.Classify(err))
	}
	return nil
}

// Listen calls wake with each notification's payload until ctx ends, and
// with "" and PartitionsChanged whenever it (re)starts listening
// (notifications of both kinds may have been missed).
func (l *Listener) Listen(ctx context.Context, wake func(payload string)) {
	if !l.enabled {
		<-ctx.Done()
		return
	}
	retry := backoff.Policy{Base: 200 * time.Millisecond, Max: 10 * time.Second}
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
func (l *Listener) session(ctx context.Context, wake func(payload string)) error {
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
	// Notifications of both kinds may have been missed while disconnected
	// (or before this first LISTEN): rows committed, partitions released.
	wake("")
	wake(PartitionsChanged)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("waiting for notifications: %w", postgres.Classify(err))
		}
		wake(n.Payload)
	}
}
