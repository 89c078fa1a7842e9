package consistency_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/go-kratos/kratos/v2/transport"

	"github.com/eventrelay/eventrelay/consistency"
)

// header is a Kratos transport.Header over http.Header.
type header http.Header

func (h header) Get(k string) string      { return http.Header(h).Get(k) }
func (h header) Set(k, v string)          { http.Header(h).Set(k, v) }
func (h header) Add(k, v string)          { http.Header(h).Add(k, v) }
func (h header) Keys() []string           { return nil }
func (h header) Values(k string) []string { return http.Header(h).Values(k) }

// request is the Kratos transport of one request.
type request struct {
	transport.Transporter
	in, out header
}

func (r request) RequestHeader() transport.Header { return r.in }
func (r request) ReplyHeader() transport.Header   { return r.out }

// TestReplyAndRequested: a write's token set with Reply is read back by
// Requested from a request carrying it, alone or comma-separated with
// another; a malformed one is ErrMalformed; outside a request there is
// none.
func TestReplyAndRequested(t *testing.T) {
	placed := consistency.Token{AggregateType: "orders.order", AggregateID: "o-1", AggregateVersion: 1}
	paid := consistency.Token{AggregateType: "orders.order", AggregateID: "o-2", AggregateVersion: 3}
	write := request{in: header{}, out: header{}}
	s := consistency.Reply(transport.NewServerContext(context.Background(), write), placed)
	if got := write.out.Get(consistency.TokenHeader); got != s || s != placed.String() {
		t.Fatalf("reply header %q, returned %q, want %q", got, s, placed.String())
	}
	read := request{in: header{}, out: header{}}
	read.in.Add(consistency.TokenHeader, s+","+paid.String())
	got, err := consistency.Requested(transport.NewServerContext(context.Background(), read))
	if err != nil || len(got) != 2 || got[0] != placed || got[1] != paid {
		t.Fatalf("Requested = %v, %v; want %v and %v", got, err, placed, paid)
	}
	read.in.Set(consistency.TokenHeader, "not a token")
	if _, err := consistency.Requested(transport.NewServerContext(context.Background(), read)); !errors.Is(err, consistency.ErrMalformed) {
		t.Errorf("malformed token: %v, want ErrMalformed", err)
	}
	if got, err := consistency.Requested(context.Background()); got != nil || err != nil {
		t.Errorf("outside a request: %v, %v", got, err)
	}
}
