package gpubsub_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

// requests counts Publish requests and refuses those carrying key bad.
type requests struct {
	n   atomic.Int64
	bad string
}

func (r *requests) React(req any) (bool, any, error) {
	pr, ok := req.(*pb.PublishRequest)
	if !ok {
		return false, nil, nil
	}
	r.n.Add(1)
	for _, m := range pr.GetMessages() {
		if r.bad != "" && m.GetOrderingKey() == r.bad {
			return true, nil, status.Error(codes.InvalidArgument, "injected: bad message")
		}
	}
	return false, nil, nil
}

func newOrdered(t *testing.T, bad string) (*gpubsub.OrderedPublisher, *gpubsubtest.Server, *requests) {
	t.Helper()
	reqs := &requests{bad: bad}
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: reqs})
	ps.Topic(t, "events")
	p := gpubsub.NewOrderedPublisher(ps.Client, gpubsubtest.Project, gpubsub.OrderedPublisherSettings{MaxMessages: 1000, Timeout: 5 * time.Second})
	t.Cleanup(p.Stop)
	return p, ps, reqs
}

func get(t *testing.T, r *gpubsub.PublishResult) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.Get(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("no publish result within 10s")
	}
	return err
}

// Messages of many keys share requests, and each key's messages reach the
// server in the order of the Publish calls.
func TestOrderedPublisherSharesRequestsAndKeepsKeyOrder(t *testing.T) {
	t.Parallel()
	p, ps, reqs := newOrdered(t, "")
	const keys, per = 200, 5
	var results []*gpubsub.PublishResult
	for v := range per {
		for k := range keys {
			results = append(results, p.Publish("events", &pubsub.Message{
				Data: []byte(fmt.Sprint(v)), OrderingKey: fmt.Sprint("k", k)}))
		}
	}
	for _, r := range results {
		if err := get(t, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := reqs.n.Load(); n > 10 {
		t.Errorf("%d Publish requests for %d messages over %d keys: messages of different keys must share requests", n, keys*per, keys)
	}
	next := map[string]int{}
	for _, m := range ps.Messages() {
		if want := fmt.Sprint(next[m.OrderingKey]); string(m.Data) != want {
			t.Fatalf("key %s: got version %s, want %s", m.OrderingKey, m.Data, want)
		}
		next[m.OrderingKey]++
	}
	if len(next) != keys {
		t.Fatalf("%d keys reached the server, want %d", len(next), keys)
	}
}

// A request that one key's message makes fail is sent again key by key:
// only that key fails (classified), and its later messages are refused
// until Resume.
func TestOrderedPublisherIsolatesAFailingKey(t *testing.T) {
	t.Parallel()
	p, ps, _ := newOrdered(t, "bad")
	var good []*gpubsub.PublishResult
	var bad *gpubsub.PublishResult
	for k := range 20 {
		if k == 7 {
			bad = p.Publish("events", &pubsub.Message{Data: []byte("x"), OrderingKey: "bad"})
		}
		good = append(good, p.Publish("events", &pubsub.Message{Data: []byte("x"), OrderingKey: fmt.Sprint("k", k)}))
	}
	for _, r := range good {
		if err := get(t, r); err != nil {
			t.Fatalf("a healthy key failed with the bad one: %v", err)
		}
	}
	err := get(t, bad)
	if errclass.Of(err) != errclass.PayloadInvalid {
		t.Fatalf("bad key: %v (reason %s), want payload_invalid", err, errclass.Of(err))
	}
	if err := get(t, p.Publish("events", &pubsub.Message{Data: []byte("y"), OrderingKey: "bad"})); !errors.Is(err, gpubsub.ErrKeyPaused) {
		t.Fatalf("after the failure, the key's next message: %v, want ErrKeyPaused", err)
	}
	p.Resume("events", "bad")
	if err := get(t, p.Publish("events", &pubsub.Message{Data: []byte("z"), OrderingKey: "bad"})); errors.Is(err, gpubsub.ErrKeyPaused) || errclass.Of(err) != errclass.PayloadInvalid {
		t.Fatalf("after Resume, the key's next message: %v, want it sent (and refused by the server again)", err)
	}
	if got := len(ps.Messages()); got != 20 {
		t.Fatalf("%d messages on the server, want the 20 healthy ones", got)
	}
}
