package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relaytest"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/admin"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// startOrders runs the orders app (its relay, projector and servers) against a test database and the
// strict Pub/Sub double with configs/pubsub.yaml, and returns a gRPC client of it.
func startOrders(t *testing.T) (*relaytest.DB, *relaytest.PubSub, *relaytest.Pipeline, ordersv1.OrderServiceClient) {
	db := ordertest.NewDB(t)
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "../../configs/pubsub.yaml", RTT: 2 * time.Millisecond})
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: orders})
	conn, err := grpc.NewClient(p.Endpoint(t, "grpc").Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return db, ps, p, ordersv1.NewOrderServiceClient(conn)
}

// TestOrdersEndToEnd: orders written over gRPC reach order_summaries through the outbox, the relay, the
// strict double and the projector until orders relayctl verify passes; a redelivery is absorbed, a bad
// body dead-lettered.
func TestOrdersEndToEnd(t *testing.T) {
	db, ps, p, client := startOrders(t)
	ctx := context.Background()
	for i := range 6 {
		o, err := client.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c", AmountCents: int64(100 + i), Currency: "EUR"})
		if err == nil && i%2 == 1 {
			_, err = client.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: o.GetOrder().GetId(), PaymentRef: "psp"})
		}
		if err == nil && i%3 == 2 {
			_, err = client.CancelOrder(ctx, &ordersv1.CancelOrderRequest{Id: o.GetOrder().GetId(), Reason: "test"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	p.WaitStats(t, orderproj.Summaries.Name, "11 events projected (6 placed, 3 paid, 2 cancelled)", time.Minute,
		func(s projector.Stats) bool { return s.Applied+s.Stale == 11 })
	var out strings.Builder // through the binary's own relayctl, as `orders relayctl verify`
	if code := orders.Relayctl(ctx, []string{"verify", "--schema", ordertest.Schema, "--database-url", db.URL}, &out, &out); code != relayctl.ExitOK {
		t.Fatalf("orders relayctl verify: exit %d\n%s", code, out.String())
	}
	// A redelivery, then a bad body on its key.
	first := relaytest.Rows(t, db.Pool)[0]
	ps.Redeliver(t, first)
	bad := &pubsub.Message{Data: []byte("not an envelope"), OrderingKey: first.OrderingKey, Attributes: maps.Clone(first.Message().Attributes)}
	bad.Attributes[contract.AttrEventID] = uuid.NewString()
	ps.Publish(t, events.Codec.Topic(), bad)
	dead := ps.WaitDeadLetters(t, orderproj.Summaries.DeadLetterTopic, 1, time.Minute)[0]
	if dead.Reason != projection.PayloadInvalid || string(dead.Data) != "not an envelope" {
		t.Errorf("dead letter %q with reason %q, want the bad body as payload_invalid", dead.Data, dead.Reason)
	}
	st := p.WaitStats(t, orderproj.Summaries.Name, "the redelivery absorbed", time.Minute, func(s projector.Stats) bool { return s.Duplicate == 1 })
	for path, want := range map[string]string{"/readyz": `"ok":true`, "/metrics": "projector_"} { // mounted by embedded
		resp, err := http.Get(p.Endpoint(t, "http").String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %.200s, want 200 with %s", path, resp.StatusCode, body, want)
		}
	}
	t.Logf("projection %+v; strict Pub/Sub double: %d requests refused", st, ps.Refused())
	rebuildCorrupted(t, db, p, st)
	paidTotalsWithToken(t, client)
}

// paidTotalsWithToken: the customer summary is totals per customer, not a
// row per order; read with the token of a payment it already counts that
// payment, answered from what the projector recorded for order-summaries
// (embedded's inbox lookup), with the projection running asynchronously.
func paidTotalsWithToken(t *testing.T, client ordersv1.OrderServiceClient) {
	ctx := context.Background()
	o, err := client.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c-token", AmountCents: 250, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	var paid metadata.MD
	if _, err := client.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: o.GetOrder().GetId(), PaymentRef: "psp"}, grpc.Header(&paid)); err != nil {
		t.Fatal(err)
	}
	tokens := paid.Get(consistency.TokenHeader)
	if len(tokens) != 1 {
		t.Fatalf("PayOrder answered tokens %q, want one", tokens)
	}
	r, err := client.GetCustomerSummary(metadata.AppendToOutgoingContext(ctx, consistency.TokenHeader, tokens[0]),
		&ordersv1.GetCustomerSummaryRequest{CustomerId: "c-token"})
	if err != nil {
		t.Fatal(err)
	}
	if s := r.GetSummary(); s.GetPaid() != 1 || s.GetPaidCents() != 250 || s.GetPlaced() != 0 {
		t.Fatalf("the summary read with the payment's token: %+v, want the payment counted (paid 1, 250 cents)", s)
	}
}

// rebuildCorrupted: a read model corrupted at the right versions (a paid
// amount changed, as a wrong totals query would) passes a version-only
// TableVerifier but not the service's totals check;
// `orders relayctl rebuild --projection order-summaries` restores it.
func rebuildCorrupted(t *testing.T, db *relaytest.DB, p *relaytest.Pipeline, before projector.Stats) {
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `UPDATE order_summaries SET amount_cents = amount_cents + 1 WHERE status = 'paid'`); err != nil {
		t.Fatal(err)
	}
	run := func(h relayctl.Hooks, args ...string) (int, string) {
		var out strings.Builder
		code := relayctl.Main(ctx, append(args, "--schema", ordertest.Schema, "--database-url", db.URL), &out, &out, h)
		return code, out.String()
	}
	versions := admin.Verifier
	versions.Columns = nil
	if code, out := run(relayctl.Hooks{Verifier: versions}, "verify"); code != relayctl.ExitOK {
		t.Fatalf("a version-only TableVerifier: exit %d, want it blind to the corruption\n%s", code, out)
	}
	if code, out := run(relayctl.Hooks{Verifier: admin.PaidTotals}, "verify"); code != relayctl.ExitProblem || !strings.Contains(out, "c: source ") {
		t.Fatalf("the paid totals check: exit %d, want 1 naming the customer's totals\n%s", code, out)
	}
	var out strings.Builder
	if code := orders.Relayctl(ctx, []string{"rebuild", "--projection", orderproj.Summaries.Name, "--dry-run", "--database-url", db.URL}, &out, &out); code != relayctl.ExitOK ||
		!strings.Contains(out.String(), "order_summaries (6 rows)") || !strings.Contains(out.String(), "replay 11 published") {
		t.Fatalf("rebuild --projection --dry-run: exit %d, want the counts\n%s", code, out.String())
	}
	out.Reset()
	if code := orders.Relayctl(ctx, []string{"rebuild", "--projection", orderproj.Summaries.Name, "--by", "test", "--why", "corrupted totals", "--database-url", db.URL}, &out, &out); code != relayctl.ExitOK {
		t.Fatalf("rebuild --projection: exit %d\n%s", code, out.String())
	}
	t.Logf("orders relayctl rebuild --projection:\n%s", out.String())
	p.WaitStats(t, orderproj.Summaries.Name, "the 11 events applied again", time.Minute,
		func(s projector.Stats) bool { return s.Applied+s.Stale >= before.Applied+before.Stale+11 })
	out.Reset()
	if code := orders.Relayctl(ctx, []string{"verify", "--database-url", db.URL}, &out, &out); code != relayctl.ExitOK {
		t.Fatalf("orders relayctl verify after the rebuild: exit %d\n%s", code, out.String())
	}
}
