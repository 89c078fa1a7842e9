package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestCounter: increments reach the read model through the outbox, the
// relay, the strict Pub/Sub double (which refuses none of the requests)
// and the projector.
func TestCounter(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "counters", Migrations: service.Migrations})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "pubsub.yaml", RTT: time.Millisecond})
	p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: service})
	u := p.Endpoint(t, "http").String()
	for range 3 {
		resp, err := http.Post(u+"/counters/c-1", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	relaytest.RequireEmitted(t, db.Pool, codec.Decode,
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", AggregateVersion: 1, Payload: wrapperspb.Int64(1)},
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", AggregateVersion: 2, Payload: wrapperspb.Int64(2)},
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", AggregateVersion: 3, Payload: wrapperspb.Int64(3)},
	)
	p.WaitStats(t, "counter-views", "3 events applied or stale", 30*time.Second, func(s projector.Stats) bool { return s.Applied+s.Stale == 3 })
	resp, err := http.Get(u + "/counters/c-1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got := strings.TrimSpace(string(b)); got != "3" {
		t.Fatalf("GET /counters/c-1 = %q, want 3", got)
	}
	if n := ps.Refused(); n != 0 {
		t.Errorf("the strict Pub/Sub double refused %d requests (Cloud Pub/Sub would refuse them too), want 0", n)
	}
}
