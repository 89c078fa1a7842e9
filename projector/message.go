package projector

import (
	"context"
	"time"
)

// Message is one delivery handed to the engine, independent of the
// transport (the Receiver adapts Pub/Sub messages; benchmarks and tests may
// feed the engine directly).
type Message struct {
	ID          string
	Data        []byte
	Attributes  map[string]string
	OrderingKey string
	// Subscription the message was received from (for the trace; empty
	// when the engine is fed directly).
	Subscription string
	// DeliveryAttempt is 0 when the subscription has no dead-letter policy.
	DeliveryAttempt int
	PublishTime     time.Time
	// Acker settles the message; required.
	Acker Acker
}

// Acker settles a delivery.
type Acker interface {
	// Ack acknowledges the message. With exactly-once delivery it waits for
	// the service's confirmation and reports a refused ack.
	Ack(ctx context.Context) error
	// Nack asks for redelivery.
	Nack()
}
