package relaytest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relay"
)

// Row is one outbox_events row.
type Row struct {
	relay.Row
	// ID is the row id (publish order within an ordering key).
	ID    int64
	Topic string
	// Origin is who wrote the row: "write" (outbox.Writer) or "rebuild".
	Origin string
	Status string
}

// Message is the Pub/Sub message the relay publishes for r (relay.Message).
func (r Row) Message() *pubsub.Message { return relay.Message(r.Row) }

// Querier is a *pgxpool.Pool, *pgx.Conn or pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

const rowColumns = `id, event_id, event_type, aggregate_type, aggregate_id, aggregate_version, schema_version,
	occurred_at, ordering_key, topic, headers, payload, origin, status`

// Rows returns the outbox rows q sees, in id order.
func Rows(t testing.TB, q Querier) []Row {
	t.Helper()
	return rows(t, q, `SELECT `+rowColumns+` FROM outbox_events ORDER BY id`)
}

func rows(t testing.TB, q Querier, sql string) []Row {
	t.Helper()
	rs, err := q.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("relaytest: reading the outbox: %v", err)
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (Row, error) {
		var o Row
		err := r.Scan(&o.ID, &o.EventID, &o.EventType, &o.AggregateType, &o.AggregateID, &o.AggregateVersion, &o.SchemaVersion,
			&o.OccurredAt, &o.OrderingKey, &o.Topic, &o.Headers, &o.Payload, &o.Origin, &o.Status)
		return o, err
	})
	if err != nil {
		t.Fatalf("relaytest: reading the outbox: %v", err)
	}
	return out
}

// Emitted is an expected outbox event. Zero fields other than EventType
// match anything.
type Emitted struct {
	EventType        string
	AggregateID      string
	AggregateVersion int64
	// SchemaVersion, when set, must equal the row's.
	SchemaVersion int32
	// Payload, when set, must equal (proto.Equal) the payload the decoder
	// reads from the row.
	Payload proto.Message
}

// RequireEmittedTx fails t unless the outbox rows tx itself wrote (not yet
// committed; savepoints included) are want, in order, and returns them.
// dec reads the rows' payloads (e.g. an envelope.Codec's Decode); it may be
// nil when no Emitted has a Payload.
func RequireEmittedTx(t testing.TB, tx pgx.Tx, dec projection.Decoder, want ...Emitted) []Row {
	t.Helper()
	// Rows whose inserting transaction is still in progress are, among
	// those tx sees, the ones tx (or one of its savepoints) wrote.
	got := rows(t, tx, `SELECT `+rowColumns+` FROM outbox_events
		WHERE pg_xact_status(xmin::text::xid8) = 'in progress' ORDER BY id`)
	requireEmitted(t, "in the transaction", got, dec, want)
	return got
}

// RequireEmitted fails t unless the outbox holds exactly want, in id order,
// and returns the rows. dec is as for RequireEmittedTx.
func RequireEmitted(t testing.TB, q Querier, dec projection.Decoder, want ...Emitted) []Row {
	t.Helper()
	got := Rows(t, q)
	requireEmitted(t, "in the outbox", got, dec, want)
	return got
}

func requireEmitted(t testing.TB, where string, got []Row, dec projection.Decoder, want []Emitted) {
	t.Helper()
	var problems []string
	if len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d events %s, want %d", len(got), where, len(want)))
	}
	for i := range min(len(got), len(want)) {
		if p := mismatch(got[i], dec, want[i]); p != "" {
			problems = append(problems, fmt.Sprintf("event %d (%s %s v%d): %s", i, got[i].EventType, got[i].AggregateID, got[i].AggregateVersion, p))
		}
	}
	if len(problems) == 0 {
		return
	}
	var list []string
	for _, r := range got {
		list = append(list, fmt.Sprintf("  %s %s v%d", r.EventType, r.AggregateID, r.AggregateVersion))
	}
	t.Fatalf("relaytest: %s\nemitted:\n%s", strings.Join(problems, "\n"), strings.Join(list, "\n"))
}

func mismatch(r Row, dec projection.Decoder, w Emitted) string {
	switch {
	case r.EventType != w.EventType:
		return fmt.Sprintf("event type %q, want %q", r.EventType, w.EventType)
	case w.AggregateID != "" && r.AggregateID != w.AggregateID:
		return fmt.Sprintf("aggregate id %q, want %q", r.AggregateID, w.AggregateID)
	case w.AggregateVersion != 0 && r.AggregateVersion != w.AggregateVersion:
		return fmt.Sprintf("version %d, want %d", r.AggregateVersion, w.AggregateVersion)
	case w.SchemaVersion != 0 && r.SchemaVersion != w.SchemaVersion:
		return fmt.Sprintf("schema version %d, want %d", r.SchemaVersion, w.SchemaVersion)
	case w.Payload == nil:
		return ""
	case dec == nil:
		return "a Payload is expected but no decoder was given"
	}
	env, err := dec(r.Payload)
	if err != nil {
		return fmt.Sprintf("decoding the payload: %v", err)
	}
	p, ok := env.Payload.(proto.Message)
	if !ok || !proto.Equal(p, w.Payload) {
		return fmt.Sprintf("payload %v, want %v", env.Payload, w.Payload)
	}
	return ""
}
