package relay

import (
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
)

// Row is the part of an outbox row that makes its Pub/Sub message.
type Row struct {
	EventID          uuid.UUID
	EventType        string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	SchemaVersion    int32
	OccurredAt       time.Time
	OrderingKey      string
	Headers          map[string]string
	Payload          []byte
}

// Message returns the Pub/Sub message the relay publishes for r: the
// payload as data, the ordering key, and as attributes the row's headers
// plus the message contract's identity (package contract), which headers cannot
// override. When it publishes, the relay also replaces traceparent and
// tracestate with those of its producer span. Tests use it to send what the
// relay would send (a redelivery) without re-implementing the attributes.
func Message(r Row) *pubsub.Message {
	return publish.Message(&claim.Event{
		EventID: r.EventID, EventType: r.EventType, AggregateType: r.AggregateType, AggregateID: r.AggregateID,
		AggregateVersion: r.AggregateVersion, SchemaVersion: r.SchemaVersion, OccurredAt: r.OccurredAt,
		OrderingKey: r.OrderingKey, Headers: r.Headers, Payload: r.Payload,
	})
}
