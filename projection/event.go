package projection

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
)

// Event is one received event: its identity (from the message attributes,
// checked against the decoded envelope), the raw body and the decoded
// payload.
type Event struct {
	ID               uuid.UUID
	Type             string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	SchemaVersion    int32
	// OccurredAt is the envelope's occurred_at (the producing commit).
	OccurredAt time.Time

	// MessageID is the Pub/Sub message id.
	MessageID string
	// DeliveryAttempt counts deliveries when the subscription has a
	// dead-letter policy; 0 when unknown.
	DeliveryAttempt int
	// Attributes are the message attributes as received.
	Attributes map[string]string
	// Body is the message data (the serialized envelope).
	Body []byte
	// Payload is what the event type's Decoder returned.
	Payload any
}

// String identifies the event in logs and errors.
func (e *Event) String() string {
	return fmt.Sprintf("%s %s %s v%d", e.ID, e.Type, e.AggregateID, e.AggregateVersion)
}

// ParseAttributes fills the identity of an Event from message attributes
// (see package contract). A missing required attribute is an attributes_missing
// error naming every missing key; an unparsable one is payload_invalid
// naming the key.
func ParseAttributes(attrs map[string]string) (Event, error) {
	id, err := contract.Parse(attrs)
	if err != nil {
		var missing *contract.MissingError
		if errors.As(err, &missing) {
			return Event{}, Permanent(AttributesMissing, err)
		}
		return Event{}, Permanent(PayloadInvalid, err)
	}
	return Event{
		ID: id.EventID, Type: id.EventType, AggregateType: id.AggregateType, AggregateID: id.AggregateID,
		AggregateVersion: id.AggregateVersion, SchemaVersion: id.SchemaVersion, OccurredAt: id.OccurredAt, Attributes: attrs,
	}, nil
}
