package outbox_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

func TestNotifyChannelForFitsPostgresIdentifiers(t *testing.T) {
	if got := outbox.NotifyChannelFor("orders"); got != "eventrelay_outbox_orders" {
		t.Errorf("NotifyChannelFor(orders) = %q", got)
	}
	long1, long2 := strings.Repeat("a", 62)+"1", strings.Repeat("a", 62)+"2"
	c1, c2 := outbox.NotifyChannelFor(long1), outbox.NotifyChannelFor(long2)
	if len(c1) > 63 || c1 == c2 || !strings.HasPrefix(c1, outbox.NotifyChannelPrefix) {
		t.Errorf("long schemas: %q (%d bytes), %q", c1, len(c1), c2)
	}
	if c1 != outbox.NotifyChannelFor(long1) {
		t.Error("NotifyChannelFor is not deterministic")
	}
}

// TestNotifyReachesOnlyTheWritersSchema: a Writer in schema orders
// notifies the channel of orders (what a relay on orders LISTENs on) and
// not the one of billing; the SQL derivation matches NotifyChannelFor for
// a schema name too long to be used as is; Config.NotifyChannel overrides.
// Postgres delivers one session's notifications in commit order, so the
// barrier notification committed after the write proves billing's
// channel received nothing from it.
func TestNotifyReachesOnlyTheWritersSchema(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	long := "service_" + strings.Repeat("x", 50) // 58 bytes: its channel is hashed
	conns := map[string]*pgx.Conn{}
	for _, schema := range []string{"orders", long} {
		if _, err := migrations.Up(ctx, db.Pool, schema, migrations.Eventrelay); err != nil {
			t.Fatal(err)
		}
		cc, err := pgx.ParseConfig(db.URL)
		if err != nil {
			t.Fatal(err)
		}
		cc.RuntimeParams["search_path"] = postgres.SearchPath(schema)
		conn, err := pgx.ConnectConfig(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		conns[schema] = conn
	}
	listen := func(channels ...string) *pgx.Conn {
		conn, err := pgx.Connect(ctx, db.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		for _, ch := range channels {
			if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
				t.Fatal(err)
			}
		}
		return conn
	}
	next := func(conn *pgx.Conn) string {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := conn.WaitForNotification(wctx)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return n.Channel
	}
	write := func(schema string, w *outbox.Writer) {
		if err := pgx.BeginFunc(ctx, conns[schema], func(tx pgx.Tx) error {
			_, err := w.InsertTx(ctx, tx, created(uuid.NewString(), 1))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}

	billing := listen(outbox.NotifyChannelFor("billing"), "barrier")
	orders := listen(outbox.NotifyChannelFor("orders"))
	longConn := listen(outbox.NotifyChannelFor(long))
	custom := listen("custom_channel")

	write("orders", newWriter(t, outbox.Config{Notify: true}))
	if _, err := conns["orders"].Exec(ctx, "SELECT pg_notify('barrier', '')"); err != nil {
		t.Fatal(err)
	}
	if ch := next(orders); ch != outbox.NotifyChannelFor("orders") {
		t.Errorf("orders listener got %q", ch)
	}
	if ch := next(billing); ch != "barrier" {
		t.Errorf("billing's listener got %q before the barrier: a write in orders woke it", ch)
	}

	write(long, newWriter(t, outbox.Config{Notify: true}))
	if ch := next(longConn); ch != outbox.NotifyChannelFor(long) {
		t.Errorf("long schema listener got %q", ch)
	}

	write("orders", newWriter(t, outbox.Config{Notify: true, NotifyChannel: "custom_channel"}))
	if ch := next(custom); ch != "custom_channel" {
		t.Errorf("custom listener got %q", ch)
	}
}
