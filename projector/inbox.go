package projector

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// sqlInsertInbox records many events of one consumer at once (a batch
// transaction before its handlers run; a non-transactional sink after the
// sink accepted them) and returns the event ids that were new; the others
// were duplicates. An empty message id is stored as NULL. The event ids
// travel as [16]byte, which pgx encodes and decodes in binary:
// uuid.UUID is a driver.Valuer, which pgx would plan and encode element
// by element through its text form.
const sqlInsertInbox = `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, message_id, processed_at)
SELECT $1::text, unnest($2::uuid[]), unnest($3::text[]), unnest($4::text[]),
       unnest($5::bigint[]), unnest($6::text[]), NULLIF(unnest($7::text[]), ''), now()
ON CONFLICT (consumer, event_id) DO NOTHING
RETURNING event_id`

// recordInbox inserts the inbox rows of items for consumer in one statement
// and marks every item whose row already existed (or that repeats an event
// earlier in items) as a duplicate. It returns the items that are new, in
// order.
func recordInbox(ctx context.Context, db inboxdb.DBTX, consumer string, items []*item) ([]*item, error) {
	n := len(items)
	ids, versions := make([][16]byte, n), make([]int64, n)
	aggTypes, aggIDs, types, msgIDs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, it := range items {
		ids[i], versions[i] = it.ev.ID, it.ev.AggregateVersion
		aggTypes[i], aggIDs[i], types[i], msgIDs[i] = it.ev.AggregateType, it.ev.AggregateID, it.ev.Type, it.ev.MessageID
	}
	rows, err := db.Query(ctx, sqlInsertInbox, consumer, ids, aggTypes, aggIDs, versions, types, msgIDs)
	if err != nil {
		return nil, fmt.Errorf("recording %d inbox rows: %w", n, postgres.Classify(err))
	}
	isNew := make(map[uuid.UUID]bool, n)
	var id [16]byte
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("recording %d inbox rows: %w", n, postgres.Classify(err))
		}
		isNew[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recording %d inbox rows: %w", n, postgres.Classify(err))
	}
	out := make([]*item, 0, len(isNew))
	for _, it := range items {
		if !isNew[it.ev.ID] {
			it.result = resultDuplicate
			continue
		}
		delete(isNew, it.ev.ID) // a second copy in the same batch is a duplicate
		out = append(out, it)
	}
	return out, nil
}
