package projector

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
)

// recordInbox inserts the inbox rows of items for consumer in one statement
// and marks every item whose row already existed (or that repeats an event
// earlier in items) as a duplicate. It returns the items that are new, in
// order.
func recordInbox(ctx context.Context, db inboxdb.DBTX, consumer string, items []*item) ([]*item, error) {
	p := inboxdb.InsertInboxEventsParams{Consumer: consumer}
	for _, it := range items {
		p.EventIds = append(p.EventIds, it.ev.ID)
		p.AggregateTypes = append(p.AggregateTypes, it.ev.AggregateType)
		p.AggregateIds = append(p.AggregateIds, it.ev.AggregateID)
		p.AggregateVersions = append(p.AggregateVersions, it.ev.Version)
		p.EventTypes = append(p.EventTypes, it.ev.Type)
		p.MessageIds = append(p.MessageIds, it.ev.MessageID)
	}
	fresh, err := inboxdb.New(db).InsertInboxEvents(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("recording %d inbox rows: %w", len(items), postgres.Classify(err))
	}
	isNew := make(map[uuid.UUID]bool, len(fresh))
	for _, id := range fresh {
		isNew[id] = true
	}
	out := make([]*item, 0, len(fresh))
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
