package logread

import (
	"errors"
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
	e, unchanged, err := d.event(r, m.Tuple)
	if err == nil && unchanged {
		err = errors.New("an inserted outbox_events row with an unchanged column")
	}
	return e, err == nil, err
}

// Change is what an update of an outbox row means to the stream.
type Change int

// The updates the stream acts on; every other update (a failure the relay
// records, the polling relay's claims and marks) is skipped.
const (
	Unchanged Change = iota
	// Replayed: the row is pending again with its claim cleared, attempts
	// 0 and replay_count above 0 (relayctl replay): it is published again.
	Replayed
	// Retried: a replayed row that had failed (it keeps its
	// error_reason: relayctl failed retry, replay, the re-drive policy):
	// it is published again with the rows of its key it held.
	Retried
	// Resolved: a failed row closed (relayctl failed resolve): the rows
	// of its key it held are released.
	Resolved
)

// update decodes an updated outbox row and what the update means. Stale
// is true when the event's columns are not all in the message (a TOASTed
// column the update left unchanged): the row is read from the table.
func (d *decoder) update(m *pglogrepl.UpdateMessage) (e claim.Event, c Change, stale bool, err error) {
	r := d.rels[m.RelationID]
	if r == nil {
		return e, Unchanged, false, fmt.Errorf("update of relation %d before its description", m.RelationID)
	}
	if !r.outbox || m.NewTuple == nil {
		return e, Unchanged, false, nil
	}
	var status string
	var replays, attempts int64
	var lockToken, reason *string
	for _, f := range []struct {
		name string
		dst  any
	}{{"status", &status}, {"replay_count", &replays}, {"attempts", &attempts}, {"lock_token", &lockToken}, {"error_reason", &reason}} {
		if err := d.column(r, m.NewTuple, f.name, f.dst); err != nil {
			return e, Unchanged, false, err
		}
	}
	switch {
	case status == "pending" && replays > 0 && attempts == 0 && lockToken == nil && reason != nil:
		c = Retried
	case status == "pending" && replays > 0 && attempts == 0 && lockToken == nil:
		c = Replayed
	case status == "resolved":
		c = Resolved
	default:
		return e, Unchanged, false, nil
	}
	e, stale, err = d.event(r, m.NewTuple)
	return e, c, stale, err
}

// event decodes the event's columns of a row; unchanged reports a column
// left out (an unchanged TOASTed value): then only ID, Topic and
// OrderingKey are sure to be set.
func (d *decoder) event(r *relation, t *pglogrepl.TupleData) (e claim.Event, unchanged bool, err error) {
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
		err := d.column(r, t, f.name, f.dst)
		if errors.Is(err, errUnchanged) {
			unchanged = true
			continue
		}
		if err != nil {
			return e, false, err
		}
	}
	e.Headers = claim.DecodeHeaders(headers)
	return e, unchanged, nil
}

// errUnchanged: the column is an unchanged TOASTed value, not in the
// message.
var errUnchanged = errors.New("unchanged TOASTed column")

// column decodes the named column of t into dst (a NULL into a pointer).
func (d *decoder) column(r *relation, t *pglogrepl.TupleData, name string, dst any) error {
	i, found := r.cols[name]
	if !found || i >= len(t.Columns) {
		return fmt.Errorf("outbox_events column %s missing from the stream", name)
	}
	c := t.Columns[i]
	format := int16(pgtype.BinaryFormatCode)
	switch c.DataType {
	case pglogrepl.TupleDataTypeBinary:
	case pglogrepl.TupleDataTypeText:
		format = pgtype.TextFormatCode
	case pglogrepl.TupleDataTypeNull:
		return d.types.Scan(r.oids[i], pgtype.TextFormatCode, nil, dst)
	case pglogrepl.TupleDataTypeToast:
		return errUnchanged
	default:
		return fmt.Errorf("outbox_events column %s: unexpected tuple data type %q", name, c.DataType)
	}
	if err := d.types.Scan(r.oids[i], format, c.Data, dst); err != nil {
		return fmt.Errorf("decoding outbox_events column %s: %w", name, err)
	}
	return nil
}
