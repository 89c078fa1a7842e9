package admin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relaytest"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// ordersRelayctl runs orders relayctl against db's orders schema.
func ordersRelayctl(t *testing.T, db string, args ...string) (int, string) {
	t.Helper()
	return ordertest.Relayctl(t, append(args, "--schema", ordertest.Schema, "--database-url", db)...)
}

// project applies every outbox event not yet applied to the read model,
// as the projector does (attributes, registry, handler in a transaction).
func project(t *testing.T, pool *pgxpool.Pool, evs []relaytest.Row) {
	t.Helper()
	reg := orderproj.Summaries.Tx
	ctx := context.Background()
	for _, e := range evs {
		ev, err := projection.ParseAttributes(e.Message().Attributes)
		if err != nil {
			t.Fatal(err)
		}
		ev.Body = e.Payload
		rt, err := reg.Resolve(&ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := rt.Handler.HandleTx(ctx, tx, &ev)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestVerifyAndRebuildThroughRelayctl: orders relayctl verify reports
// the read model's drift (exit 1) and a clean one (exit 0); rebuild
// restates every order at its current version through the outbox.
func TestVerifyAndRebuildThroughRelayctl(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	svc := ordertest.NewService(t, db.Pool)
	ctx := context.Background()
	var ids []string
	for range 3 {
		r, err := svc.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c", AmountCents: 10, Currency: "EUR"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.GetOrder().GetId())
	}
	if _, err := svc.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: ids[1], PaymentRef: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelOrder(ctx, &ordersv1.CancelOrderRequest{Id: ids[2], Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	written := relaytest.Rows(t, db.Pool)

	// Only the first events projected: one order current, two stale.
	project(t, db.Pool, written[:3])
	code, out := ordersRelayctl(t, db.URL, "verify")
	if code != relayctl.ExitProblem || !strings.Contains(out, "stale") {
		t.Fatalf("verify with two stale summaries: exit %d, want %d naming stale:\n%s", code, relayctl.ExitProblem, out)
	}
	project(t, db.Pool, written[3:])
	if code, out := ordersRelayctl(t, db.URL, "verify"); code != relayctl.ExitOK {
		t.Fatalf("verify after projecting everything: exit %d:\n%s", code, out)
	}

	if code, out := ordersRelayctl(t, db.URL, "rebuild", "--by", "test", "--why", "restate"); code != relayctl.ExitOK {
		t.Fatalf("rebuild: exit %d:\n%s", code, out)
	}
	want := map[string]struct {
		typ     string
		version int64
	}{ids[0]: {"orders.order.placed", 1}, ids[1]: {"orders.order.paid", 2}, ids[2]: {"orders.order.cancelled", 2}}
	restated := relaytest.Rows(t, db.Pool)[len(written):]
	if len(restated) != len(want) {
		t.Fatalf("rebuild wrote %d outbox rows, want %d", len(restated), len(want))
	}
	for _, e := range restated {
		w := want[e.AggregateID]
		if e.Origin != "rebuild" || e.EventType != w.typ || e.AggregateVersion != w.version || e.Topic != "orders.order.events" {
			t.Errorf("restatement of %s: %s v%d origin %s on %s, want %s v%d origin rebuild on orders.order.events",
				e.AggregateID, e.EventType, e.AggregateVersion, e.Origin, e.Topic, w.typ, w.version)
		}
		if _, err := events.Codec.Decode(e.Payload); err != nil {
			t.Errorf("restatement of %s: %v", e.AggregateID, err)
		}
	}
}

// TestMigrateAppliesBothSets: orders relayctl migrate up creates
// eventrelay's tables and the orders tables in a new schema, each set with
// its own version table.
func TestMigrateAppliesBothSets(t *testing.T) {
	t.Parallel()
	db := ordertest.NewDB(t)
	flags := []string{"--schema", "orders_copy", "--database-url", db.URL, "--by", "test", "--why", "new schema"}
	if code, out := ordertest.Relayctl(t, append([]string{"migrate", "up"}, flags...)...); code != relayctl.ExitOK {
		t.Fatalf("migrate up: exit %d:\n%s", code, out)
	}
	for _, table := range []string{"outbox_events", "inbox_events", "eventrelay_goose_db_version", "orders", "order_summaries", "orders_goose_db_version"} {
		var found bool
		if err := db.Pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", "orders_copy."+table).Scan(&found); err != nil || !found {
			t.Errorf("orders_copy.%s after migrate up: found %v (%v)", table, found, err)
		}
	}
}
