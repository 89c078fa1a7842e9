package projector

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// itemView is the tests' read model, created by each test's database.
const itemView = `CREATE TABLE item_view (
	item_id    text PRIMARY KEY,
	version    bigint NOT NULL,
	name       text NOT NULL,
	deleted_at timestamptz
)`

// upsertItemView is the version-guarded upsert of one event into item_view.
const upsertItemView = `INSERT INTO item_view (item_id, version, name, deleted_at)
	VALUES ($1, $2, $3, CASE WHEN $4 THEN now() END)
	ON CONFLICT (item_id) DO UPDATE SET version = EXCLUDED.version, name = EXCLUDED.name, deleted_at = EXCLUDED.deleted_at
	WHERE item_view.version < EXCLUDED.version`

// msg is one message of the test domain (internal/testevent).
type msg struct {
	EventID    uuid.UUID
	Data       []byte
	Attributes map[string]string
}

// itemEvent is the message of version v of item id, or of its deletion.
func itemEvent(t testing.TB, id uuid.UUID, v int64, deleted bool) msg {
	t.Helper()
	e := testevent.Item(id.String(), v, 0)
	if deleted {
		e = testevent.Deleted(id.String(), v)
	}
	eid, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	ident := contract.Identity{EventID: eid, EventType: e.EventType, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
		AggregateVersion: v, SchemaVersion: 1, OccurredAt: time.Now()}
	body, err := testevent.Encode(outbox.Metadata{EventID: eid, EventType: e.EventType, AggregateType: e.AggregateType,
		AggregateID: e.AggregateID, AggregateVersion: v, SchemaVersion: 1, OccurredAt: ident.OccurredAt}, e.Payload)
	if err != nil {
		t.Fatal(err)
	}
	return msg{EventID: eid, Data: body, Attributes: ident.Attributes()}
}

// items writes item_view, guarded by the aggregate version: one event at a
// time (TxHandler) or a batch in one call (TxBatchHandler).
type items struct{}

func (items) HandleTx(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	s, ok := ev.Payload.(*structpb.Struct)
	if !ok {
		return 0, projection.Permanent(projection.PayloadInvalid, fmt.Errorf("payload is %T, want a Struct", ev.Payload))
	}
	tag, err := tx.Exec(ctx, upsertItemView, ev.AggregateID, ev.AggregateVersion, s.GetFields()["name"].GetStringValue(), ev.Type == testevent.TypeDeleted)
	if err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return projection.Stale, nil
	}
	return projection.Applied, nil
}

func (h items) HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*projection.Event) ([]projection.Result, error) {
	out := make([]projection.Result, len(evs))
	for i, ev := range evs {
		o, err := h.HandleTx(ctx, tx, ev)
		if err != nil {
			return nil, err
		}
		out[i].Outcome = o
	}
	return out, nil
}

// registerItems registers h for the test domain's event types.
func registerItems[H any](t testing.TB, reg *projection.Registry[H], h H) {
	t.Helper()
	for _, typ := range []string{testevent.TypeCreated, testevent.TypeUpdated, testevent.TypeDeleted} {
		if err := reg.Register(projection.EventType{Name: typ, SchemaVersions: []int32{1}, Decode: testevent.Decode}, h); err != nil {
			t.Fatal(err)
		}
	}
}
