package projection

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Message attribute names. The publisher repeats the envelope's identity in
// these attributes so that routing and triage never need the body.
const (
	AttrEventID       = "event_id"
	AttrEventType     = "event_type"
	AttrAggregateType = "aggregate_type"
	AttrAggregateID   = "aggregate_id"
	AttrVersion       = "version"
	AttrSchemaVersion = "schema_version"
	AttrOccurredAt    = "occurred_at"
	AttrTraceparent   = "traceparent"
)

// RequiredAttributes must be present on every message; a message without
// one of them is dead-lettered with reason attributes_missing.
var RequiredAttributes = []string{AttrEventID, AttrEventType, AttrAggregateID, AttrVersion, AttrSchemaVersion}

// Event is one received event: its identity (from the message attributes,
// checked against the decoded envelope), the raw body and the decoded
// payload.
type Event struct {
	ID            uuid.UUID
	Type          string
	AggregateType string
	AggregateID   string
	Version       int64
	SchemaVersion int32
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
	return fmt.Sprintf("%s %s %s v%d", e.ID, e.Type, e.AggregateID, e.Version)
}

// ParseAttributes fills the identity of an Event from message attributes.
// A missing required attribute is an attributes_missing error naming every
// missing key; an unparsable one is payload_invalid naming the key.
func ParseAttributes(attrs map[string]string) (Event, error) {
	var missing []string
	for _, k := range RequiredAttributes {
		if strings.TrimSpace(attrs[k]) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return Event{}, Permanent(AttributesMissing, fmt.Errorf("missing message attributes: %s", strings.Join(missing, ", ")))
	}
	ev := Event{
		Type:          attrs[AttrEventType],
		AggregateType: attrs[AttrAggregateType],
		AggregateID:   attrs[AttrAggregateID],
		Attributes:    attrs,
	}
	var err error
	if ev.ID, err = uuid.Parse(attrs[AttrEventID]); err != nil {
		return Event{}, Permanent(PayloadInvalid, fmt.Errorf("attribute %s %q is not a UUID", AttrEventID, attrs[AttrEventID]))
	}
	if ev.ID == uuid.Nil {
		// The inbox dedupes by event id: every nil-id event would be
		// taken for a duplicate of the first and silently dropped.
		return Event{}, Permanent(PayloadInvalid, fmt.Errorf("attribute %s %q is the nil UUID", AttrEventID, attrs[AttrEventID]))
	}
	if ev.Version, err = strconv.ParseInt(attrs[AttrVersion], 10, 64); err != nil || ev.Version < 1 {
		return Event{}, Permanent(PayloadInvalid, fmt.Errorf("attribute %s %q is not a positive integer", AttrVersion, attrs[AttrVersion]))
	}
	sv, err := strconv.ParseInt(attrs[AttrSchemaVersion], 10, 32)
	if err != nil || sv < 1 {
		return Event{}, Permanent(PayloadInvalid, fmt.Errorf("attribute %s %q is not a positive integer", AttrSchemaVersion, attrs[AttrSchemaVersion]))
	}
	ev.SchemaVersion = int32(sv)
	if s := attrs[AttrOccurredAt]; s != "" {
		// Informational only: the envelope's occurred_at wins after decoding.
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			ev.OccurredAt = t
		}
	}
	return ev, nil
}
