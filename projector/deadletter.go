package projector

import (
	"context"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector/internal/deadletter"
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
