package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// rows are the validated, encoded outbox rows of one InsertTx call, in the
// order of its events.
type rows []outboxdb.InsertOutboxEventParams

// statementBytes caps the payload and header bytes InsertTx sends in one
// statement: Postgres refuses a protocol message over 1 GB, and pgx builds
// each message in memory. Any cap of a few hundred kB already saves the
// round trips.
const statementBytes = 16 << 20

// insert writes rs, as few statements as limit bytes allow, in order, and
// records each row's id and insert time in out[i].
func (rs rows) insert(ctx context.Context, q *outboxdb.Queries, out []Written, limit int) error {
	for len(rs) > 0 {
		n := rs.fit(limit)
		if err := rs[:n].statement(ctx, q, out[:n]); err != nil {
			return err
		}
		rs, out = rs[n:], out[n:]
	}
	return nil
}

// fit is how many leading rows of rs go into one statement: as many as
// fit in limit bytes, and at least one.
func (rs rows) fit(limit int) int {
	size := 0
	for i, r := range rs {
		size += len(r.Payload) + len(r.Headers)
		if i > 0 && size > limit {
			return i
		}
	}
	return len(rs)
}

// statement writes rs in one statement. A single row takes the single-row
// INSERT: one round trip either way, and the cheaper statement
// (BenchmarkInsertTx).
func (rs rows) statement(ctx context.Context, q *outboxdb.Queries, out []Written) error {
	if len(rs) == 1 {
		row, err := q.InsertOutboxEvent(ctx, rs[0])
		if err != nil {
			return fmt.Errorf("inserting outbox event %s: %w", rs[0].EventID, err)
		}
		out[0].ID, out[0].CreatedAt = row.ID, row.CreatedAt
		return nil
	}
	cols := rs.columns()
	cols.Notify, cols.NotifyChannel = rs[0].Notify, rs[0].NotifyChannel
	stored, err := q.InsertOutboxEvents(ctx, cols)
	if err != nil {
		// One statement wrote them all: the detail names the row that
		// failed, e.g. the key of a duplicate aggregate version.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Detail != "" {
			return fmt.Errorf("inserting %d outbox events: %w (%s)", len(rs), err, pgErr.Detail)
		}
		return fmt.Errorf("inserting %d outbox events: %w", len(rs), err)
	}
	// Publishers deliver one ordering key's rows in id order, so the ids
	// must ascend in input order. Postgres inserts the rows of INSERT ...
	// SELECT ... ORDER BY in that order; this check keeps a change of that
	// from reordering events silently.
	slices.SortFunc(stored, func(a, b outboxdb.InsertOutboxEventsRow) int { return cmp.Compare(a.ID, b.ID) })
	if len(stored) != len(rs) {
		return fmt.Errorf("inserting %d outbox events: %d rows stored", len(rs), len(stored))
	}
	for i, s := range stored {
		if s.EventID != rs[i].EventID {
			return fmt.Errorf("inserting %d outbox events: ids not assigned in input order: id %d went to event %s, want event %d (%s)", len(rs), s.ID, s.EventID, i, rs[i].EventID)
		}
		out[i].ID, out[i].CreatedAt = s.ID, s.CreatedAt
	}
	return nil
}

// columns transposes rs into the arrays of InsertOutboxEvents.
func (rs rows) columns() outboxdb.InsertOutboxEventsParams {
	n := len(rs)
	c := outboxdb.InsertOutboxEventsParams{
		EventIds:          make([]uuid.UUID, n),
		AggregateTypes:    make([]string, n),
		AggregateIds:      make([]string, n),
		AggregateVersions: make([]int64, n),
		EventTypes:        make([]string, n),
		SchemaVersions:    make([]int32, n),
		OrderingKeys:      make([]string, n),
		Topics:            make([]string, n),
		Headers:           make([]json.RawMessage, n),
		Payloads:          make([][]byte, n),
		OccurredAts:       make([]time.Time, n),
		Origins:           make([]string, n),
	}
	for i, r := range rs {
		c.EventIds[i] = r.EventID
		c.AggregateTypes[i] = r.AggregateType
		c.AggregateIds[i] = r.AggregateID
		c.AggregateVersions[i] = r.AggregateVersion
		c.EventTypes[i] = r.EventType
		c.SchemaVersions[i] = r.SchemaVersion
		c.OrderingKeys[i] = r.OrderingKey
		c.Topics[i] = r.Topic
		c.Headers[i] = r.Headers
		c.Payloads[i] = r.Payload
		c.OccurredAts[i] = r.OccurredAt
		c.Origins[i] = r.Origin
	}
	return c
}
