package projector

import (
	"context"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector/internal/deadletter"
)

// Attributes a dead letter carries on top of all the original attributes
// (see Projection.DeadLetterTopic). (Written by
// projector/internal/deadletter; the tests read them by these names.)
const (
	// AttrErrorReason is the failure's projection.Reason.
	AttrErrorReason = "error_reason"
	// AttrError is the error text, cut to Pub/Sub's 1024-byte limit.
	AttrError = "error"
	// AttrProjection is the Projection.Name.
	AttrProjection = "projection"
	// AttrDeliveryAttempt is the delivery attempt (0 without a
	// subscription dead-letter policy).
	AttrDeliveryAttempt = "delivery_attempt"
	// AttrOriginalMessageID is the dead-lettered message's ID.
	AttrOriginalMessageID = "original_message_id"
	// AttrDeadLetteredAt is when, RFC 3339 with nanoseconds, UTC.
	AttrDeadLetteredAt = "dead_lettered_at"
)

// deadLetterer records a message that can never be applied. It returns nil
// only once the record is durable; the engine acks the message after that.
type deadLetterer interface {
	DeadLetter(ctx context.Context, m *message, projection string, reason projection.Reason, cause error) error
}

// topicDeadLetterer publishes dead letters to the projection's
// DeadLetterTopic.
type topicDeadLetterer struct{ *deadletter.Topic }

// newTopicDeadLetterer publishes to topic (an id or a full name). Call
// Stop when done.
func newTopicDeadLetterer(client *pubsub.Client, topic string) *topicDeadLetterer {
	return &topicDeadLetterer{deadletter.NewTopic(client, topic)}
}

// DeadLetter implements deadLetterer.
func (d *topicDeadLetterer) DeadLetter(ctx context.Context, m *message, proj string, reason projection.Reason, cause error) error {
	return d.Publish(ctx, deadletter.Original{ID: m.ID, Data: m.Data, Attributes: m.Attributes, DeliveryAttempt: m.DeliveryAttempt},
		proj, reason, cause)
}
