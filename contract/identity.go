package contract

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Attribute names.
const (
	AttrEventID       = "event_id"
	AttrEventType     = "event_type"
	AttrAggregateType = "aggregate_type"
	AttrAggregateID   = "aggregate_id"
	AttrVersion       = "version"
	AttrSchemaVersion = "schema_version"
	AttrOccurredAt    = "occurred_at"
	AttrTraceparent   = "traceparent"
	// AttrReplayFor is set only on a message a dead-letter replay
	// republished: the ID of the subscription whose consumer
	// dead-lettered it. Consumers of every other subscription of the topic
	// ack it without applying it, so a replay reaches the one projection
	// it is for (docs/decisions/0017-dlq-replay-for-one-subscription.md).
	AttrReplayFor = "replay_for"
)

// Required lists the attributes every message must carry; Parse refuses a
// message without one of them.
var Required = []string{AttrEventID, AttrEventType, AttrAggregateID, AttrVersion, AttrSchemaVersion}

// Identity is an event's identity as the message attributes carry it.
type Identity struct {
	EventID          uuid.UUID
	EventType        string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	SchemaVersion    int32
	// OccurredAt is informational: a consumer trusts the envelope's.
	OccurredAt time.Time
}

// Put writes id's attributes into attrs, replacing any of the same name.
func (id Identity) Put(attrs map[string]string) {
	attrs[AttrEventID] = id.EventID.String()
	attrs[AttrEventType] = id.EventType
	attrs[AttrAggregateType] = id.AggregateType
	attrs[AttrAggregateID] = id.AggregateID
	attrs[AttrVersion] = strconv.FormatInt(id.AggregateVersion, 10)
	attrs[AttrSchemaVersion] = strconv.FormatInt(int64(id.SchemaVersion), 10)
	attrs[AttrOccurredAt] = id.OccurredAt.UTC().Format(time.RFC3339Nano)
}

// Attributes returns id's attributes in a new map.
func (id Identity) Attributes() map[string]string {
	attrs := make(map[string]string, 7)
	id.Put(attrs)
	return attrs
}

// MissingError is Parse's error for absent or blank required attributes.
type MissingError struct {
	// Keys are the missing attribute names, sorted.
	Keys []string
}

func (e *MissingError) Error() string {
	return "missing message attributes: " + strings.Join(e.Keys, ", ")
}

// InvalidError is Parse's error for an attribute whose value does not
// decode.
type InvalidError struct {
	Key, Value string
	// Problem says what is wrong with Value.
	Problem string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("attribute %s %q is %s", e.Key, e.Value, e.Problem)
}

// Parse reads the identity from message attributes. A missing required
// attribute is a *MissingError naming every missing one; an undecodable one
// an *InvalidError naming it. An unparsable occurred_at is ignored (it is
// informational).
func Parse(attrs map[string]string) (Identity, error) {
	var missing []string
	for _, k := range Required {
		if strings.TrimSpace(attrs[k]) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return Identity{}, &MissingError{Keys: missing}
	}
	id := Identity{EventType: attrs[AttrEventType], AggregateType: attrs[AttrAggregateType], AggregateID: attrs[AttrAggregateID]}
	var err error
	if id.EventID, err = uuid.Parse(attrs[AttrEventID]); err != nil {
		return Identity{}, &InvalidError{Key: AttrEventID, Value: attrs[AttrEventID], Problem: "not a UUID"}
	}
	if id.EventID == uuid.Nil {
		// Consumers dedupe by event id: every nil-id event would be
		// taken for a duplicate of the first.
		return Identity{}, &InvalidError{Key: AttrEventID, Value: attrs[AttrEventID], Problem: "the nil UUID"}
	}
	if id.AggregateVersion, err = strconv.ParseInt(attrs[AttrVersion], 10, 64); err != nil || id.AggregateVersion < 1 {
		return Identity{}, &InvalidError{Key: AttrVersion, Value: attrs[AttrVersion], Problem: "not a positive integer"}
	}
	sv, err := strconv.ParseInt(attrs[AttrSchemaVersion], 10, 32)
	if err != nil || sv < 1 {
		return Identity{}, &InvalidError{Key: AttrSchemaVersion, Value: attrs[AttrSchemaVersion], Problem: "not a positive integer"}
	}
	id.SchemaVersion = int32(sv)
	if s := attrs[AttrOccurredAt]; s != "" {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			id.OccurredAt = t
		}
	}
	return id, nil
}

// MessageAttributes returns the attributes of the message that carries
// an event with these headers and identity: the headers, with id's
// attributes replacing any of the same name.
func (id Identity) MessageAttributes(headers map[string]string) map[string]string {
	attrs := make(map[string]string, 7+len(headers))
	for k, v := range headers {
		attrs[k] = v
	}
	id.Put(attrs)
	return attrs
}
