// Command drillpublish publishes one message with a byte-exact body
// (base64) and attributes to a Pub/Sub topic. scripts/runbook-drill.sh uses
// it to plant dead letters with protobuf bodies: gcloud pubsub topics
// publish cannot (it refuses bodies that are not UTF-8, and the shell drops
// NUL bytes), which is also why the runbook republishes protobuf dead
// letters with relayctl dlq replay.
//
//	drillpublish -topic T -data-b64 B64 (standard or URL-safe) [-ordering-key K] [-attr k=v ...]
//
// Connects like relayctl: PUBSUB_PROJECT_ID, PUBSUB_EMULATOR_HOST.
package main

import (
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

type attrs map[string]string

func (a attrs) String() string { return fmt.Sprint(map[string]string(a)) }

func (a attrs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	a[k] = v
	return nil
}

func main() {
	a := attrs{}
	topic := flag.String("topic", "", "topic id (required)")
	data := flag.String("data-b64", "", "message body, base64 (required)")
	key := flag.String("ordering-key", "", "ordering key")
	flag.Var(a, "attr", "attribute key=value (repeatable)")
	flag.Parse()
	if err := run(*topic, *data, *key, a); err != nil {
		fmt.Fprintln(os.Stderr, "drillpublish:", err)
		os.Exit(1)
	}
}

func run(topic, data, key string, a attrs) error {
	if topic == "" || data == "" {
		return fmt.Errorf("-topic and -data-b64 are required")
	}
	// gcloud --format=json prints message data in URL-safe base64.
	data = strings.NewReplacer("-", "+", "_", "/").Replace(strings.TrimSpace(data))
	body, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return fmt.Errorf("-data-b64: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := gpubsub.NewClient(ctx, gpubsub.Config{ProjectID: os.Getenv("PUBSUB_PROJECT_ID"), EmulatorHost: os.Getenv("PUBSUB_EMULATOR_HOST")})
	if err != nil {
		return err
	}
	defer client.Close()
	p := client.Publisher(topic)
	p.EnableMessageOrdering = key != ""
	defer p.Stop()
	id, err := p.Publish(ctx, &pubsub.Message{Data: body, Attributes: a, OrderingKey: key}).Get(ctx)
	if err != nil {
		return fmt.Errorf("publishing to %s: %w", topic, gpubsub.Classify(err))
	}
	fmt.Println(id)
	return nil
}
