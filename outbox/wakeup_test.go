package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestNotifyOnlyWhenAPublisherAsked: with Notify on, a commit notifies when
// no publisher keeps a row in outbox_wakeups (older or polling publishers)
// or when one is armed, and not while every registered publisher is busy.
// A barrier notification committed after each write proves a missing one:
// one session's notifications arrive in commit order.
func TestNotifyOnlyWhenAPublisherAsked(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	channel := outbox.NotifyChannelFor(db.Schema)
	listener, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	for _, ch := range []string{channel, "barrier"} {
		if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// write commits events events in one call (one statement: the single-
	// or the multi-row insert), then the barrier, and returns the first
	// channel notified.
	write := func(w *outbox.Writer, events int) string {
		t.Helper()
		var evs []outbox.Event
		for range events {
			evs = append(evs, created(uuid.NewString(), 1))
		}
		if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			_, err := w.InsertTx(ctx, tx, evs...)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		exec("SELECT pg_notify('barrier', '')")
		first := ""
		for {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			n, err := listener.WaitForNotification(wctx)
			cancel()
			if err != nil {
				t.Fatalf("no notification: %v", err)
			}
			if first == "" {
				first = n.Channel
			}
			if n.Channel == "barrier" {
				return first
			}
		}
	}
	notify := newWriter(t, outbox.Config{Notify: true})

	for _, step := range []struct {
		name, setup string
		w           *outbox.Writer
		events      int
		want        string
	}{
		{"no publisher registered", "", notify, 1, channel},
		{"every publisher busy", "INSERT INTO outbox_wakeups (worker_id, armed_until) VALUES ('a', now()), ('b', now() - interval '1 minute')", notify, 1, "barrier"},
		{"every publisher busy, several events", "", notify, 3, "barrier"},
		{"one publisher armed", "UPDATE outbox_wakeups SET armed_until = now() + interval '1 minute' WHERE worker_id = 'b'", notify, 1, channel},
		{"one publisher armed, several events", "", notify, 3, channel},
		{"its arming expired", "UPDATE outbox_wakeups SET armed_until = now() - interval '1 second'", notify, 3, "barrier"},
	} {
		if step.setup != "" {
			exec(step.setup)
		}
		if got := write(step.w, step.events); got != step.want {
			t.Errorf("%s: first notification on %q, want %q", step.name, got, step.want)
		}
	}
}
