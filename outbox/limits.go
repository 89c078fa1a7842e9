package outbox

import (
	"fmt"
	"strings"

	"github.com/eventrelay/eventrelay/contract"
)

// reservedTraceparent stands for the traceparent attribute the relay's
// publish span adds to a message that has none, so the attribute count
// the writer checks is the count Pub/Sub sees.
var reservedTraceparent = "00-" + strings.Repeat("0", 32) + "-" + strings.Repeat("0", 16) + "-00"

// checkMessage refuses, with ErrInvalidEvent, an event whose message as
// the relay builds it from the row (its headers plus the contract
// attributes, the ordering key, the envelope) Cloud Pub/Sub would refuse.
func checkMessage(meta Metadata, body []byte) error {
	attrs := contract.Identity{
		EventID: meta.EventID, EventType: meta.EventType, AggregateType: meta.AggregateType, AggregateID: meta.AggregateID,
		AggregateVersion: meta.AggregateVersion, SchemaVersion: meta.SchemaVersion, OccurredAt: meta.OccurredAt,
	}.MessageAttributes(meta.Headers)
	if _, ok := attrs[contract.AttrTraceparent]; !ok {
		attrs[contract.AttrTraceparent] = reservedTraceparent
	}
	if err := contract.CheckMessage(body, attrs, meta.OrderingKey, 0); err != nil {
		return fmt.Errorf("%w: %w (Pub/Sub refuses the message; headers, AggregateID, EventType and OrderingKey become its attributes and ordering key)", ErrInvalidEvent, err)
	}
	return nil
}
