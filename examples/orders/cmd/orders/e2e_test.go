package main

import (
	"context"
	"log/slog"
	"maps"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/eventrelay/eventrelay/relayctl"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/wire"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/events"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
)

// TestOrdersEndToEnd: orders written over gRPC reach order_summaries through the outbox, the relay, the
// strict Pub/Sub double (configs/pubsub.yaml) and the projector until orders-relayctl verify passes; a
// redelivery is absorbed, a bad body dead-lettered.
func TestOrdersEndToEnd(t *testing.T) {
	db := ordertest.NewDB(t)
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "../../configs/pubsub.yaml", RTT: 2 * time.Millisecond})
	app, err := newApp(Config{HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", Timeout: 10 * time.Second, ShutdownTimeout: time.Minute,
		Schema: ordertest.Schema, Subscription: "orders.order-summaries", DeadLetterTopic: "orders.order.events.dlq-summaries",
		EmbedRelay: true, Instance: "e2e"}, db.Pool, ps.Client, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := app.GRPC.Endpoint() // listens now, before Run
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	t.Cleanup(func() { _ = app.Stop(); <-done })
	conn, _ := grpc.NewClient(addr.Host, grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer conn.Close()
	orders, ctx := ordersv1.NewOrderServiceClient(conn), context.Background()
	for i := range 6 {
		o, err := orders.PlaceOrder(ctx, &ordersv1.PlaceOrderRequest{CustomerId: "c", AmountCents: int64(100 + i), Currency: "EUR"})
		if err == nil && i%2 == 1 {
			_, err = orders.PayOrder(ctx, &ordersv1.PayOrderRequest{Id: o.GetOrder().GetId(), PaymentRef: "psp"})
		}
		if err == nil && i%3 == 2 {
			_, err = orders.CancelOrder(ctx, &ordersv1.CancelOrderRequest{Id: o.GetOrder().GetId(), Reason: "test"})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	converged := func(events int) {
		for start := time.Now(); ; time.Sleep(200 * time.Millisecond) {
			var inbox int
			_ = db.Pool.QueryRow(ctx, "SELECT count(*) FROM inbox_events").Scan(&inbox)
			code, out := ordertest.Relayctl(t, "verify", "--schema", ordertest.Schema, "--database-url", db.URL)
			if code == relayctl.ExitOK && inbox == events {
				return
			} else if time.Since(start) > 60*time.Second {
				t.Fatalf("after 60s: %d of %d events in the inbox; verify exit %d:\n%s", inbox, events, code, out)
			}
		}
	}
	converged(11) // 6 placed, 3 paid, 2 cancelled
	// A redelivery, then a bad body on its key (handled after it).
	first := relaytest.Rows(t, db.Pool)[0].Message()
	ps.Publish(t, events.Topic, first)
	bad := &pubsub.Message{Data: []byte("not an envelope"), OrderingKey: first.OrderingKey, Attributes: maps.Clone(first.Attributes)}
	bad.Attributes[wire.AttrEventID] = uuid.NewString()
	ps.Publish(t, events.Topic, bad)
	dead := ps.Receive(t, "orders.order.events.dlq-summaries", 1, 60*time.Second)[0]
	if r := dead.Attributes["error_reason"]; r != "payload_invalid" || string(dead.Data) != "not an envelope" {
		t.Errorf("dead letter %q with reason %q, want the bad body as payload_invalid", dead.Data, r)
	}
	converged(11)
	t.Logf("strict Pub/Sub double: %d requests refused", ps.Refused())
}
