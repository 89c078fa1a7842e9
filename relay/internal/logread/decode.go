package logread

import (
	"fmt"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/relay/internal/claim"
)

// decoder turns pgoutput's inserts of schema.outbox_events into events.
// pgoutput describes a relation (its columns and their types) before its
// first row in a session and again after a change, so the decoder maps
// columns by name: a migration that adds a column changes nothing.
type decoder struct {
	schema string
	types  *pgtype.Map
	rels   map[uint32]*relation
}

type relation struct {
	outbox bool           // schema.outbox_events
	cols   map[string]int // column name -> position
	oids   []uint32
}

func newDecoder(schema string) *decoder {
	return &decoder{schema: schema, types: pgtype.NewMap(), rels: map[uint32]*relation{}}
}

// relation records a relation's description.
func (d *decoder) relation(m *pglogrepl.RelationMessage) {
	r := &relation{outbox: m.Namespace == d.schema && m.RelationName == "outbox_events", cols: map[string]int{}}
	for i, c := range m.Columns {
		r.cols[c.Name] = i
		r.oids = append(r.oids, c.DataType)
	}
	d.rels[m.RelationID] = r
}

// insert decodes an inserted row; ok is false for a row of another table.
// The event is copied out of the message's buffer.
func (d *decoder) insert(m *pglogrepl.InsertMessage) (e claim.Event, ok bool, err error) {
	r := d.rels[m.RelationID]
	if r == nil {
		return e, false, fmt.Errorf("insert into relation %d before its description", m.RelationID)
	}
	if !r.outbox {
		return e, false, nil
	}
	var headers string
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"id", &e.ID}, {"event_id", &e.EventID}, {"aggregate_type", &e.AggregateType},
		{"aggregate_id", &e.AggregateID}, {"aggregate_version", &e.AggregateVersion},
		{"event_type", &e.EventType}, {"schema_version", &e.SchemaVersion},
		{"ordering_key", &e.OrderingKey}, {"topic", &e.Topic}, {"headers", &headers},
		{"payload", &e.Payload}, {"occurred_at", &e.OccurredAt}, {"created_at", &e.CreatedAt},
	} {
		i, found := r.cols[f.name]
		if !found || i >= len(m.Tuple.Columns) {
			return e, false, fmt.Errorf("outbox_events column %s missing from the stream", f.name)
		}
		c := m.Tuple.Columns[i]
		if c.DataType != pglogrepl.TupleDataTypeText {
			return e, false, fmt.Errorf("outbox_events column %s: unexpected tuple data type %q", f.name, c.DataType)
		}
		if err := d.types.Scan(r.oids[i], pgtype.TextFormatCode, c.Data, f.dst); err != nil {
			return e, false, fmt.Errorf("decoding outbox_events column %s: %w", f.name, err)
		}
	}
	e.Headers = claim.DecodeHeaders(headers)
	return e, true, nil
}
