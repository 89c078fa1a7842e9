package ordertest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/wire"
)

// OutboxEvent is one outbox row as the relay publishes it.
type OutboxEvent struct {
	ID            uuid.UUID
	Type          string
	AggregateType string
	AggregateID   string
	Version       int64
	SchemaVersion int32
	OccurredAt    time.Time
	OrderingKey   string
	Topic         string
	Origin        string
	Payload       []byte
}

// OutboxEvents returns the outbox rows in insertion order.
func OutboxEvents(t testing.TB, pool *pgxpool.Pool) []OutboxEvent {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT event_id, event_type, aggregate_type, aggregate_id,
		aggregate_version, schema_version, occurred_at, ordering_key, topic, origin, payload FROM outbox_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []OutboxEvent
	for rows.Next() {
		var e OutboxEvent
		if err := rows.Scan(&e.ID, &e.Type, &e.AggregateType, &e.AggregateID, &e.Version, &e.SchemaVersion,
			&e.OccurredAt, &e.OrderingKey, &e.Topic, &e.Origin, &e.Payload); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Attributes are the Pub/Sub attributes the relay gives e's message.
func (e OutboxEvent) Attributes() map[string]string {
	return map[string]string{
		wire.AttrEventID:       e.ID.String(),
		wire.AttrEventType:     e.Type,
		wire.AttrAggregateType: e.AggregateType,
		wire.AttrAggregateID:   e.AggregateID,
		wire.AttrVersion:       strconv.FormatInt(e.Version, 10),
		wire.AttrSchemaVersion: strconv.Itoa(int(e.SchemaVersion)),
		wire.AttrOccurredAt:    e.OccurredAt.UTC().Format(time.RFC3339Nano),
	}
}
