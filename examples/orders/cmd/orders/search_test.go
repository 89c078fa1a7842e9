package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relayctl"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
	"github.com/eventrelay/eventrelay/examples/orders/internal/biz"
	"github.com/eventrelay/eventrelay/examples/orders/internal/ordertest"
	orderproj "github.com/eventrelay/eventrelay/examples/orders/internal/projection"
)

// TestSearchReadModel: with ELASTIC_URL the app also projects every order
// into the search index "orders" (Elasticsearch's test server here);
// SearchOrders, given the consistency token of a write, sees that write at
// once, by customer and by status; `orders relayctl verify` compares the
// index with the orders table, `rebuild --reindex` rebuilds it behind the
// alias. READ_PATH_SEARCH=false turns the search read path off.
func TestSearchReadModel(t *testing.T) {
	es := elastictest.New(elastictest.Options{})
	t.Cleanup(es.Close)
	t.Setenv("ELASTIC_URL", es.URL)
	db, _, p, client := startOrders(t)
	search := func(customer string, st ordersv1.OrderStatus, tokens ...string) []*ordersv1.Order {
		t.Helper()
		ctx := context.Background()
		for _, tok := range tokens {
			ctx = metadata.AppendToOutgoingContext(ctx, consistency.TokenHeader, tok)
		}
		r, err := client.SearchOrders(ctx, &ordersv1.SearchOrdersRequest{CustomerId: customer, Status: st})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetOrders()
	}
	const paid = ordersv1.OrderStatus_ORDER_STATUS_PAID
	for i := range 4 {
		var placed, payment metadata.MD
		o, err := client.PlaceOrder(context.Background(), &ordersv1.PlaceOrderRequest{CustomerId: "search", AmountCents: int64(100 + i), Currency: "EUR"}, grpc.Header(&placed))
		if err != nil {
			t.Fatal(err)
		}
		if got := search("search", 0, placed.Get(consistency.TokenHeader)...); len(got) != i+1 {
			t.Fatalf("after placing order %d, the search read with its token finds %d orders", i+1, len(got))
		}
		if i%2 == 1 {
			continue
		}
		if _, err := client.PayOrder(context.Background(), &ordersv1.PayOrderRequest{Id: o.GetOrder().GetId(), PaymentRef: "psp"}, grpc.Header(&payment)); err != nil {
			t.Fatal(err)
		}
		got := search("search", paid, payment.Get(consistency.TokenHeader)...)
		if len(got) != i/2+1 || got[0].GetId() != o.GetOrder().GetId() || got[0].GetVersion() != 2 || got[0].GetStatus() != paid {
			t.Fatalf("after paying order %d, the paid orders read with its token: %v", i+1, got)
		}
	}
	if got := search("someone else", 0); len(got) != 0 {
		t.Errorf("another customer's search found %v", got)
	}
	p.WaitStats(t, orderproj.Search.Projection.Name, "6 events in the index", time.Minute, func(s projector.Stats) bool { return s.Applied+s.Stale == 6 })
	// verify compares order_summaries too: its projection must have caught up as well.
	p.WaitStats(t, orderproj.Summaries.Name, "6 events in order_summaries", time.Minute, func(s projector.Stats) bool { return s.Applied+s.Stale == 6 })

	// orders relayctl: verify the index, rebuild it behind the alias, verify again.
	relayctlOK := func(args ...string) string {
		t.Helper()
		var out strings.Builder
		args = append(args, "--schema", ordertest.Schema, "--database-url", db.URL, "--elastic-url", es.URL)
		if code := orders.Relayctl(context.Background(), args, &out, &out); code != relayctl.ExitOK {
			t.Fatalf("orders relayctl %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
		return out.String()
	}
	if out := relayctlOK("verify"); !strings.Contains(out, "elasticsearch alias orders: OK (4 rows") {
		t.Fatalf("verify:\n%s", out)
	}
	if out := relayctlOK("rebuild", "--reindex", "--restate=false", "--by", "test", "--why", "search read model"); !strings.Contains(out, "reindexed 4 document(s)") {
		t.Fatalf("rebuild --reindex:\n%s", out)
	}
	if out := relayctlOK("verify"); !strings.Contains(out, "elasticsearch alias orders: OK (4 rows") || !strings.Contains(out, "CONVERGED") {
		t.Fatalf("verify after the reindex:\n%s", out)
	}
	if got := search("search", paid); len(got) != 2 {
		t.Errorf("paid orders after the reindex: %v", got)
	}

	// The read path switch: off, SearchOrders answers SEARCH_DISABLED.
	t.Setenv("READ_PATH_SEARCH", "false")
	_, _, _, off := startOrders(t)
	_, err := off.SearchOrders(context.Background(), &ordersv1.SearchOrdersRequest{CustomerId: "search"})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "read path is off") {
		t.Errorf("search with READ_PATH_SEARCH=false: %v, want UNAVAILABLE %s", err, biz.ReasonSearchDisabled)
	}
}
