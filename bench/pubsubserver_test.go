package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

func TestParsePubsubServer(t *testing.T) {
	port, rtt, err := parsePubsubServer("34567/15ms")
	if err != nil || port != 34567 || rtt != 15*time.Millisecond {
		t.Fatalf(`parsePubsubServer("34567/15ms") = %d, %v, %v`, port, rtt, err)
	}
	for _, bad := range []string{"", "34567", "34567/", "x/0s", "0/0s", "70000/0s", "34567/-1ms", "34567/fast"} {
		if _, _, err := parsePubsubServer(bad); err == nil {
			t.Errorf("parsePubsubServer(%q): no error", bad)
		}
	}
}

// The server is pstest behind the strict double: it refuses what Cloud
// Pub/Sub refuses, and its counts reach the stats file at exit.
func TestServePubsubCountsWhatItServed(t *testing.T) {
	port, err := relaytest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	stats := filepath.Join(t.TempDir(), "stats.json")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- servePubsub(ctx, addr, 0, stats) }()

	cfg := settings.PubSub{ProjectID: Project, EmulatorHost: addr}
	var cl *pubsub.Client
	deadline := time.Now().Add(10 * time.Second)
	for {
		if cl, err = embedded.NewPubSubClient(context.Background(), cfg); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b := &Backend{Name: "pstest", Config: cfg, Client: cl}
	if err := b.EnsureTopic(context.Background(), "served"); err != nil {
		t.Fatal(err)
	}
	pub := cl.Publisher("served")
	if _, err := pub.Publish(context.Background(), &pubsub.Message{Data: []byte("ok")}).Get(context.Background()); err != nil {
		t.Fatalf("a valid message: %v", err)
	}
	// An attribute key Cloud Pub/Sub refuses (reserved prefix "goog").
	if _, err := pub.Publish(context.Background(), &pubsub.Message{Data: []byte("x"), Attributes: map[string]string{"googclient_x": "1"}}).Get(context.Background()); err == nil {
		t.Fatal("a message with a reserved attribute key was accepted")
	}
	pub.Stop()
	cl.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	var st strictpubsub.Stats
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.PublishRequests != 2 || st.Refused != 1 || st.ByRule["reserved_attribute_key"] != 1 {
		t.Errorf("counts %+v, want 2 Publish requests, 1 refused (reserved_attribute_key)", st)
	}
}
