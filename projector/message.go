package projector

import (
	"context"
	"time"

	"github.com/eventrelay/eventrelay/projection"
)

// message is one delivery handed to the engine, independent of the
// transport (the receiver adapts Pub/Sub messages; benchmarks and tests may
// feed the engine directly).
type message struct {
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
	Acker acker
	// observe, when set, is told how the message was settled (Deliver).
	observe func(Delivery)
}

// report tells observe how the message was settled.
func (m *message) report(o Outcome, reason projection.Reason, err error) {
	if m.observe != nil {
		m.observe(Delivery{MessageID: m.ID, Outcome: o, Reason: reason, Err: err})
	}
}

// acker settles a delivery.
type acker interface {
	// Ack acknowledges the message. With exactly-once delivery it waits for
	// the service's confirmation and reports a refused ack.
	Ack(ctx context.Context) error
	// Nack asks for redelivery.
	Nack()
	// Confirms reports whether Ack waits for the service's confirmation.
	Confirms() bool
}
