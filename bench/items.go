package bench

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
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
// item, version-guarded, written as an adopter writes one (a
// projection.ExecFunc, README step 3): a batch's upserts go to Postgres
// in one round trip.
var benchItems = projection.ExecFunc[any](func(ctx context.Context, db projection.DBTX, ev *projection.Event, _ any) error {
	_, err := db.Exec(ctx, sqlUpsertItem, ev.AggregateID, ev.AggregateVersion, itemDeleted(ev))
	return err
})

// sqlUpsertItem is the version-guarded upsert of one event.
const sqlUpsertItem = `INSERT INTO ` + itemsTable + ` (item_id, version, deleted) VALUES ($1, $2, $3)
	ON CONFLICT (item_id) DO UPDATE SET version = EXCLUDED.version, deleted = EXCLUDED.deleted
	WHERE ` + itemsTable + `.version < EXCLUDED.version`

func itemDeleted(ev *projection.Event) bool {
	return ev.Type == testevent.TypeDeleted || ev.Type == events.TypeVideoDeleted
}

// noopItems applies nothing: the receive scenario's floor, the
// projector's own work per event (and its decoder) without a read
// model statement.
var noopItems = projection.TxHandlerFunc(func(context.Context, pgx.Tx, *projection.Event) (projection.Outcome, error) {
	return projection.Applied, nil
})
