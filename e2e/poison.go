package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/embedded"
)

// Dead-letter subscriptions of the reference domain (configs/pubsub.yaml).
const (
	DLQSubscriptionPG = "catalog.video.events.dlq-pg"
	DLQSubscriptionES = "catalog.video.events.dlq-es"
)

// PoisonAttr marks messages the harness injected; the order checker skips
// them.
const PoisonAttr = "e2e_poison"

// IsPoison reports a harness-injected message.
func IsPoison(m *pubsub.Message) bool { return m.Attributes[PoisonAttr] != "" }

// DeadLetter is one message as `relayctl dlq list --json` shows it.
type DeadLetter struct {
	MessageID   string            `json:"message_id"`
	Attributes  map[string]string `json:"attributes"`
	Reason      string            `json:"reason"`
	EventID     string            `json:"event_id"`
	AggregateID string            `json:"aggregate_id"`
	Projection  string            `json:"projection"`
	Error       string            `json:"error"`
}

// ListDLQ lists the dead letters of sub without acking them.
func (s *Stack) ListDLQ(ctx context.Context, sub string) ([]DeadLetter, error) {
	out, _, err := s.RelayctlCode(ctx, "dlq", "list", "--subscription", sub, "--json")
	if err != nil {
		return nil, err
	}
	var dl []DeadLetter
	if strings.TrimSpace(out) == "" || strings.TrimSpace(out) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(out), &dl); err != nil {
		return nil, fmt.Errorf("decoding relayctl dlq list --json: %w: %q", err, out)
	}
	return dl, nil
}

// WaitDLQ polls sub until match selects at least n dead letters.
func (s *Stack) WaitDLQ(ctx context.Context, sub string, n int, timeout time.Duration, match func(DeadLetter) bool) ([]DeadLetter, error) {
	var got []DeadLetter
	var listErr error
	err := poll(ctx, time.Second, timeout, func() (bool, string) {
		all, err := s.ListDLQ(ctx, sub)
		if err != nil {
			listErr = err
			return true, ""
		}
		got = got[:0]
		for _, d := range all {
			if match(d) {
				got = append(got, d)
			}
		}
		return len(got) >= n, fmt.Sprintf("%d of %d expected dead letters in %s (all: %d)", len(got), n, sub, len(all))
	})
	if listErr != nil {
		return nil, listErr
	}
	return got, err
}

// PublishMalformed publishes n messages whose body is not an envelope
// straight to the main topic, each with its own ordering key, an event_id
// attribute (to find them in the dead-letter queues) and the PoisonAttr
// marker. It returns their event ids.
func (s *Stack) PublishMalformed(ctx context.Context, n int) ([]string, error) {
	cl, err := embedded.NewPubSubClient(ctx, s.PubSubConfig())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	pub := cl.Publisher(Topic)
	pub.EnableMessageOrdering = true
	defer pub.Stop()
	var ids []string
	for i := range n {
		id := uuid.NewString()
		key := fmt.Sprintf("e2e-poison-%d", i)
		r := pub.Publish(ctx, &pubsub.Message{
			Data:        []byte("\xff\xfe this is not an event envelope"),
			OrderingKey: key,
			Attributes: map[string]string{
				PoisonAttr:       "malformed",
				"event_id":       id,
				"event_type":     "catalog.video.updated",
				"aggregate_type": "catalog.video",
				"aggregate_id":   key,
				"version":        "1",
				"schema_version": "1",
			},
		})
		if _, err := r.Get(ctx); err != nil {
			return nil, fmt.Errorf("publishing poison: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
