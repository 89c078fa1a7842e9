package wakeup_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/relay/internal/wakeup"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestUnannouncedUntilTheWriterEnds: a READ COMMITTED writer that reads
// the only relay busy skips its NOTIFY and is unannounced until its
// transaction ends, whether the relay armed meanwhile or not; a writer
// that reads the relay armed notifies and is not; a REPEATABLE READ
// writer notifies even while the relay is busy (its snapshot predates
// anything it could lock).
func TestUnannouncedUntilTheWriterEnds(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	l := wakeup.NewListener(db.Pool, "", true, slog.New(slog.DiscardHandler))
	want := func(armedFor time.Duration) {
		t.Helper()
		if err := l.Want(ctx, "relay", armedFor); err != nil {
			t.Fatal(err)
		}
	}
	unannounced := func(want bool, when string) {
		t.Helper()
		got, err := l.Unannounced(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: Unannounced = %v, want %v", when, got, want)
		}
	}
	// write starts a writer transaction at level and calls outbox_notify
	// as outbox.Writer does; it returns the transaction and whether it
	// notified.
	write := func(level pgx.TxIsoLevel) (pgx.Tx, bool) {
		t.Helper()
		tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: level})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		var notified bool
		if err := tx.QueryRow(ctx, `SELECT outbox_notify('', false)`).Scan(&notified); err != nil {
			t.Fatal(err)
		}
		return tx, notified
	}

	want(0) // busy
	unannounced(false, "no writer")
	late, notified := write(pgx.ReadCommitted)
	if notified {
		t.Fatal("a writer notified the busy relay")
	}
	unannounced(true, "a writer read the relay busy")
	want(time.Minute) // the relay armed before the writer committed
	unannounced(true, "the relay armed, the writer still in flight")
	armed, notified := write(pgx.ReadCommitted)
	if !notified {
		t.Fatal("a writer did not notify the armed relay")
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	unannounced(false, "the writer that read the relay busy committed; the one that notified is in flight")
	if err := armed.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	want(0)
	if _, notified := write(pgx.RepeatableRead); !notified {
		t.Error("a REPEATABLE READ writer did not notify the busy relay")
	}
	unannounced(false, "a REPEATABLE READ writer in flight")
	rolledBack, _ := write(pgx.ReadCommitted)
	if err := rolledBack.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	unannounced(false, "the writer that read the relay busy rolled back")
}
