// Package deadletter publishes the messages a projection can never apply
// to its dead-letter topic: the original body and attributes plus the
// attributes that say why.
package deadletter

import (
	"context"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/projection"
)

// Topic publishes dead letters to a Pub/Sub topic.
type Topic struct {
	pub   *pubsub.Publisher
	topic string
}

// NewTopic publishes to topic (an id or a full name). Call Stop when done.
func NewTopic(client *pubsub.Client, topic string) *Topic {
	return &Topic{pub: client.Publisher(topic), topic: topic}
}

// Publish publishes the dead letter of m and returns nil once Pub/Sub
// stored it.
func (d *Topic) Publish(ctx context.Context, m Original, proj string, reason projection.Reason, cause error) error {
	res := d.pub.Publish(ctx, &pubsub.Message{Data: m.Data, Attributes: Attributes(m, proj, reason, cause)})
	if _, err := res.Get(ctx); err != nil {
		return fmt.Errorf("publishing dead letter to %s: %w", d.topic, gpubsub.Classify(err))
	}
	return nil
}

// Stop flushes and stops the publisher.
func (d *Topic) Stop() { d.pub.Stop() }

// Original is the message that is dead-lettered.
type Original struct {
	ID              string
	Data            []byte
	Attributes      map[string]string
	DeliveryAttempt int
}

// Attributes returns the attributes of m's dead letter: all of m's, plus
// error_reason, error, projection, delivery_attempt, original_message_id
// and dead_lettered_at.
func Attributes(m Original, proj string, reason projection.Reason, cause error) map[string]string {
	attrs := make(map[string]string, len(m.Attributes)+6)
	for k, v := range m.Attributes {
		attrs[k] = v
	}
	attrs[contract.AttrErrorReason] = string(reason)
	attrs[contract.AttrError] = truncate(cause.Error(), contract.MaxAttributeValueBytes)
	attrs[contract.AttrProjection] = proj
	attrs[contract.AttrDeliveryAttempt] = strconv.Itoa(m.DeliveryAttempt)
	attrs[contract.AttrOriginalMessageID] = m.ID
	attrs[contract.AttrDeadLetteredAt] = time.Now().UTC().Format(time.RFC3339Nano)
	return attrs
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
