package main

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/consistency"

	ordersv1 "github.com/eventrelay/eventrelay/examples/orders/api/orders/v1"
)

// TestReadYourWrites: every write answers with a consistency token
// (x-consistency-token); the customer summary read with it sees that write
// at once, although the read model is filled asynchronously (a read without
// it may not: counted and logged). A malformed token is refused naming the
// header.
func TestReadYourWrites(t *testing.T) {
	_, _, _, client := startOrders(t)
	summary := func(tokens ...string) *ordersv1.CustomerSummary {
		ctx := context.Background()
		for _, tok := range tokens {
			ctx = metadata.AppendToOutgoingContext(ctx, consistency.TokenHeader, tok)
		}
		r, err := client.GetCustomerSummary(ctx, &ordersv1.GetCustomerSummaryRequest{CustomerId: "ryw"})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetSummary()
	}
	stale := 0
	for i := range 5 {
		var placed, paid metadata.MD
		o, err := client.PlaceOrder(context.Background(), &ordersv1.PlaceOrderRequest{CustomerId: "ryw", AmountCents: 100, Currency: "EUR"}, grpc.Header(&placed))
		if err != nil {
			t.Fatal(err)
		}
		if summary().GetOrders() != int64(i+1) {
			stale++
		}
		if s := summary(placed.Get(consistency.TokenHeader)...); s.GetOrders() != int64(i+1) {
			t.Fatalf("after placing order %d, the summary read with its token has %d orders", i+1, s.GetOrders())
		}
		if _, err := client.PayOrder(context.Background(), &ordersv1.PayOrderRequest{Id: o.GetOrder().GetId(), PaymentRef: "psp"}, grpc.Header(&paid)); err != nil {
			t.Fatal(err)
		}
		if s := summary(paid.Get(consistency.TokenHeader)...); s.GetPaid() != int64(i+1) || s.GetPlaced() != 0 {
			t.Fatalf("after paying order %d, the summary read with its token is %+v", i+1, s)
		}
	}
	t.Logf("reads without the token right after a write: %d of 5 stale", stale)
	ctx := metadata.AppendToOutgoingContext(context.Background(), consistency.TokenHeader, "not-a-token")
	_, err := client.GetCustomerSummary(ctx, &ordersv1.GetCustomerSummaryRequest{CustomerId: "ryw"})
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), consistency.TokenHeader) {
		t.Errorf("malformed token: %v, want InvalidArgument naming %s", err, consistency.TokenHeader)
	}
}
