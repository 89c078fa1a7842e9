package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestCounter: increments reach the read model through the outbox, the
// relay, the strict Pub/Sub double and the projector.
func TestCounter(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: schema, Migrations: []migrations.Set{migrations.Eventrelay, counterSet}})
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "pubsub.yaml", RTT: time.Millisecond})
	app, hs, err := newApp(db.Pool, ps.Client, "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	u, err := hs.Endpoint()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	t.Cleanup(func() {
		if err := app.Stop(); err != nil {
			t.Error(err)
		}
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	for range 3 {
		resp, err := http.Post(u.String()+"/counters/c-1", "", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	relaytest.RequireEmitted(t, db.Pool, codec.Decode,
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", Version: 1, Payload: wrapperspb.Int64(1)},
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", Version: 2, Payload: wrapperspb.Int64(2)},
		relaytest.Emitted{EventType: incremented, AggregateID: "c-1", Version: 3, Payload: wrapperspb.Int64(3)},
	)
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(u.String() + "/counters/c-1"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got = strings.TrimSpace(string(b)); got == "3" {
				t.Logf("projected; strict Pub/Sub double refused %d requests", ps.Refused())
				return
			}
		}
	}
	t.Fatalf("GET /counters/c-1 = %q after 30s, want 3", got)
}
