package command

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// The tests' service: items (its source of truth) and item_view (its read
// model) in schema items, events of internal/testevent, and relayctl
// hooks over them. No real service's domain is involved.

// testSchema is the schema of the tests' service.
const testSchema = "items"

// itemsSet is the tests' service's migration set.
var itemsSet = migrations.Set{Name: "items", VersionTable: "items_goose_db_version", FS: fstest.MapFS{
	"00001_items.sql": {Data: []byte(`-- +goose Up
CREATE TABLE items (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    version    bigint NOT NULL,
    deleted_at timestamptz
);
CREATE TABLE item_view (
    item_id    uuid PRIMARY KEY,
    name       text NOT NULL,
    version    bigint NOT NULL,
    deleted_at timestamptz
);
-- +goose Down
DROP TABLE item_view;
DROP TABLE items;
`)},
}}

// itemHooks are the tests' service's relayctl hooks.
func itemHooks() hook.Hooks {
	return hook.Hooks{
		Schema:      testSchema,
		Migrations:  []migrations.Set{migrations.Eventrelay, itemsSet},
		Rebuilder:   itemRebuilder{},
		Verifier:    itemVerifier{},
		Decoder:     itemDecoder{},
		Projections: []hook.Projection{{Name: "item-view", Tables: []string{"item_view"}}},
	}
}

// itemDecoder decodes a testevent envelope (a Struct) for dlq show.
type itemDecoder struct{}

func (itemDecoder) Decode(body []byte, _ map[string]string) (proto.Message, error) {
	if _, err := testevent.Decode(body); err != nil {
		return nil, err
	}
	var env structpb.Struct
	return &env, proto.Unmarshal(body, &env)
}

// itemRebuilder restates items: created at version 1, updated later,
// deleted for a deleted item.
type itemRebuilder struct{}

func (itemRebuilder) Subject() hook.Subject {
	return hook.Subject{Noun: "item", Source: "items", Tombstone: "test.item.deleted", Topic: "items.events", Encoder: testevent.Encode}
}

func (itemRebuilder) CheckID(id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return fmt.Errorf("%q is not an item id (a UUID)", id)
	}
	return nil
}

func (itemRebuilder) Count(ctx context.Context, tx pgx.Tx, ids []string) (hook.Count, error) {
	var c hook.Count
	err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM items
		WHERE cardinality($1::uuid[]) = 0 OR id = ANY($1::uuid[])`, ids).Scan(&c.Total, &c.Deleted)
	return c, err
}

func (itemRebuilder) Restate(ctx context.Context, tx pgx.Tx, after string, ids []string, limit int) ([]outbox.Event, error) {
	if after == "" {
		after = uuid.Nil.String()
	}
	rows, err := tx.Query(ctx, `SELECT id::text, name, version, deleted_at IS NOT NULL FROM items
		WHERE id > $1::uuid AND (cardinality($2::uuid[]) = 0 OR id = ANY($2::uuid[]))
		ORDER BY id LIMIT $3 FOR SHARE`, after, ids, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []outbox.Event
	for rows.Next() {
		var (
			id, name string
			version  int64
			deleted  bool
		)
		if err := rows.Scan(&id, &name, &version, &deleted); err != nil {
			return nil, err
		}
		ev := itemEvent(id, name, version, deleted)
		ev.Restatement, ev.Topic = true, "items.events" // as envelope's Codec.Event sets it
		out = append(out, ev)
	}
	return out, rows.Err()
}

// itemEvent is the event that brings item id to version with name (or
// deletes it).
func itemEvent(id, name string, version int64, deleted bool) outbox.Event {
	if deleted {
		return testevent.Deleted(id, version)
	}
	ev := testevent.Item(id, version, 0)
	ev.Payload = testevent.Payload(id, version, name, "")
	return ev
}

// itemVerifier compares items with item_view.
type itemVerifier struct{}

func (itemVerifier) Verify(ctx context.Context, tx pgx.Tx, env hook.Env, samples int) (hook.Report, error) {
	rep := hook.Report{Noun: "item"}
	if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM items`).Scan(&rep.Rows, &rep.Deleted); err != nil {
		return rep, err
	}
	store := hook.Store{Name: "postgres item_view", Checked: true}
	if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE deleted_at IS NOT NULL) FROM item_view`).Scan(&store.Rows, &store.Tombstones); err != nil {
		return rep, err
	}
	rows, err := tx.Query(ctx, `SELECT coalesce(i.id, v.item_id)::text, coalesce(i.version, 0), coalesce(v.version, 0),
			CASE WHEN v.item_id IS NULL THEN CASE WHEN i.deleted_at IS NULL THEN 'missing' ELSE 'missing_tombstone' END
			     WHEN i.id IS NULL THEN 'extra'
			     WHEN v.version < i.version THEN 'stale'
			     WHEN v.version > i.version THEN 'ahead'
			     WHEN (i.deleted_at IS NULL) <> (v.deleted_at IS NULL) THEN CASE WHEN i.deleted_at IS NULL THEN 'deleted_in_projection' ELSE 'resurrected' END
			     WHEN i.name <> v.name THEN 'diverged' END AS kind
		FROM items i FULL OUTER JOIN item_view v ON v.item_id = i.id ORDER BY 1`)
	if err != nil {
		return rep, err
	}
	defer rows.Close()
	tally := hook.NewTally(samples)
	for rows.Next() {
		var (
			id             string
			source, stored int64
			kind           *string
		)
		if err := rows.Scan(&id, &source, &stored, &kind); err != nil {
			return rep, err
		}
		if kind != nil {
			tally.Add(*kind, id, source, stored)
		}
	}
	if err := rows.Err(); err != nil {
		return rep, err
	}
	store.Drift = tally.Drift()
	rep.Stores = append(rep.Stores, store)
	// The search store is a second read model the verifier reaches over
	// the network, when configured; the tests only ever point it at a
	// closed port.
	addr := env.Getenv("ITEM_SEARCH_ADDR")
	if addr == "" {
		rep.Stores = append(rep.Stores, hook.Store{Name: "search items", Note: "ITEM_SEARCH_ADDR is not set"})
		return rep, nil
	}
	conn, err := net.DialTimeout("tcp", addr, env.ConnectTimeout)
	if err != nil {
		return rep, fmt.Errorf("search store at %s unreachable: %w", addr, err)
	}
	conn.Close()
	return rep, errors.New("the tests' search store speaks no protocol")
}
