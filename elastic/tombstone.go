package elastic

import (
	"encoding/json"
	"time"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Tombstone fields. Every document of a projection carries FieldDeleted
// (false while the aggregate lives); a deletion is indexed as a document
// with FieldDeleted true and FieldDeletedAt, at the deletion's version.
// The index mapping should declare them: "deleted": {"type": "boolean"},
// "deleted_at": {"type": "date"}.
const (
	FieldDeleted   = "deleted"
	FieldDeletedAt = "deleted_at"
)

// Tombstone returns the source of a tombstone document: fields (may be nil,
// e.g. the aggregate id for triage) plus deleted=true and deleted_at.
// Index it with BulkIndex at the deletion's aggregate version.
func Tombstone(deletedAt time.Time, fields map[string]any) ([]byte, error) {
	doc := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		doc[k] = v
	}
	doc[FieldDeleted] = true
	doc[FieldDeletedAt] = deletedAt.UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, errclass.New(errclass.PayloadInvalid, err)
	}
	return b, nil
}

// LiveFilter is the query clause searches add to hide tombstones. It is a
// must_not on deleted=true, so documents written without the field still
// match.
func LiveFilter() map[string]any {
	return map[string]any{"bool": map[string]any{"must_not": []any{
		map[string]any{"term": map[string]any{FieldDeleted: true}},
	}}}
}
