package bench

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/testevent"
	"github.com/eventrelay/eventrelay/projection"
)

// The generic read model of the readwait and receive scenarios: the
// newest version of each aggregate in itemsTable, the projection (and
// inbox consumer) itemsModel. Readwait's events are internal/testevent
// items; receive's are catalog events (events.Codec, the library's
// protobuf envelope), as a service using the envelope package sends them.
const (
	itemsModel = "bench.items"
	// noopModel is the projection (and inbox consumer) of noopItems.
	noopModel  = "bench.items-noop"
	itemsTable = "bench_items"
	// itemsPadding makes each event's payload a few hundred bytes.
	itemsPadding = 300
	// sqlCreateItems creates the read model's table.
	sqlCreateItems = `CREATE TABLE IF NOT EXISTS ` + itemsTable + ` (item_id text PRIMARY KEY, version bigint NOT NULL, deleted boolean NOT NULL)`
)

// testeventTypes are the event types of internal/testevent (readwait).
func testeventTypes() []projection.EventType {
	var ets []projection.EventType
	for _, typ := range []string{testevent.TypeCreated, testevent.TypeUpdated, testevent.TypeDeleted} {
		ets = append(ets, projection.EventType{Name: typ, SchemaVersions: []int32{1}, Decode: testevent.Decode})
	}
	return ets
}

// catalogTypes are the event types of events.Codec (receive).
func catalogTypes() ([]projection.EventType, error) {
	var ets []projection.EventType
	for _, typ := range events.Codec.Types() {
		et, err := events.Codec.EventType(typ)
		if err != nil {
			return nil, err
		}
		ets = append(ets, et)
	}
	return ets, nil
}

// itemsRegistry maps every one of ets to h (benchItems, or noopItems).
func itemsRegistry(h projection.TxHandler, ets []projection.EventType) (*projection.Registry[projection.TxHandler], error) {
	reg := projection.NewRegistry[projection.TxHandler]()
	for _, et := range ets {
		if err := reg.Register(et, h); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// benchItems is the scenario's read model: the newest version of each
// item, version-guarded. It is a projection.TxBatchHandler, as a read
// model under load is (the catalog's Videos is): a batch's upserts are
// pipelined, one round trip per batch.
type benchItems struct{}

var _ projection.TxBatchHandler = benchItems{}

// sqlUpsertItem is the version-guarded upsert of one event.
const sqlUpsertItem = `INSERT INTO ` + itemsTable + ` (item_id, version, deleted) VALUES ($1, $2, $3)
	ON CONFLICT (item_id) DO UPDATE SET version = EXCLUDED.version, deleted = EXCLUDED.deleted
	WHERE ` + itemsTable + `.version < EXCLUDED.version`

func (benchItems) HandleTx(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	tag, err := tx.Exec(ctx, sqlUpsertItem, ev.AggregateID, ev.Version, itemDeleted(ev))
	if err != nil {
		return 0, err
	}
	return itemOutcome(tag.RowsAffected()), nil
}

func (benchItems) HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*projection.Event) ([]projection.Result, error) {
	b := &pgx.Batch{}
	for _, ev := range evs {
		b.Queue(sqlUpsertItem, ev.AggregateID, ev.Version, itemDeleted(ev))
	}
	br := tx.SendBatch(ctx, b)
	out := make([]projection.Result, len(evs))
	for i := range evs {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, err
		}
		out[i].Outcome = itemOutcome(tag.RowsAffected())
	}
	return out, br.Close()
}

func itemDeleted(ev *projection.Event) bool {
	return ev.Type == testevent.TypeDeleted || ev.Type == events.TypeVideoDeleted
}

// itemOutcome is Stale when the guarded upsert changed no row.
func itemOutcome(rows int64) projection.Outcome {
	if rows == 0 {
		return projection.Stale
	}
	return projection.Applied
}

// noopItems applies nothing: the receive scenario's floor, the
// projector's own work per event (and its decoder) without a read
// model statement.
var noopItems = projection.TxHandlerFunc(func(context.Context, pgx.Tx, *projection.Event) (projection.Outcome, error) {
	return projection.Applied, nil
})
