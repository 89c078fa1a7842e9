package outbox_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestInsertTxRefusesWhatConsumersDrop: an event that would commit but
// that the relay, Pub/Sub or the projections would then refuse or drop
// (an attribute only a replay sets, an identity attribute in the headers,
// an aggregate id or event type of white space, an empty attribute key, a
// topic Pub/Sub reserves) or that Postgres cannot store as text (a NUL) is
// refused by InsertTx with ErrInvalidEvent naming the field, and writes
// nothing.
func TestInsertTxRefusesWhatConsumersDrop(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	cases := []refusal{
		{"replay_for", `Headers["replay_for"] is reserved`, func(e *outbox.Event) { e.Headers = map[string]string{"replay_for": "items-projection"} }},
		{"identity header", `Headers["event_id"] is reserved`, func(e *outbox.Event) { e.Headers = map[string]string{"event_id": uuid.NewString()} }},
		{"white space aggregate id", "AggregateID is only white space", func(e *outbox.Event) { e.AggregateID = " \t\n" }},
		{"white space event type", "EventType is only white space", func(e *outbox.Event) { e.EventType = "  " }},
		{"white space aggregate type", "AggregateType is only white space", func(e *outbox.Event) { e.AggregateType = " " }},
		{"empty header key", "Headers has an empty key", func(e *outbox.Event) { e.Headers = map[string]string{"": "v"} }},
		{"goog topic", `Topic: topic id "goog.x" starts with "goog"`, func(e *outbox.Event) { e.Topic = "goog.x" }},
		{"NUL in aggregate id", "AggregateID has a NUL byte", func(e *outbox.Event) { e.AggregateID = "a\x00b" }},
		{"NUL in aggregate type", "AggregateType has a NUL byte", func(e *outbox.Event) { e.AggregateType = "test.item\x00" }},
		{"NUL in event type", "EventType has a NUL byte", func(e *outbox.Event) { e.EventType = "test.item.created\x00" }},
		{"NUL in ordering key", "OrderingKey has a NUL byte", func(e *outbox.Event) { e.OrderingKey = "k\x00" }},
		{"NUL in header value", `Headers["x-tenant"] has a NUL byte`, func(e *outbox.Event) { e.Headers = map[string]string{"x-tenant": "t\x001"} }},
		{"NUL in header key", `Headers["x-\x00"] has a NUL byte`, func(e *outbox.Event) { e.Headers = map[string]string{"x-\x00": "v"} }},
	}
	checkRefusals(t, db, w, cases)
}

// TestNewWriterRefusesReservedTopics: a route to a topic id Pub/Sub
// reserves is a configuration error.
func TestNewWriterRefusesReservedTopics(t *testing.T) {
	for _, cfg := range []outbox.Config{
		{Encoder: encode, DefaultTopic: "goog-events"},
		{Encoder: encode, Topics: map[string]string{"a": "GOOGx"}},
	} {
		if _, err := outbox.NewWriter(cfg); err == nil || !strings.Contains(err.Error(), `starts with "goog"`) {
			t.Errorf("NewWriter(%v): %v, want an error naming the goog prefix", cfg, err)
		}
	}
}
