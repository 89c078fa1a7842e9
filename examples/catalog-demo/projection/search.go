package projection

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	proj "github.com/eventrelay/eventrelay/projection"
)

// SearchConsumer is the inbox consumer name of the search index.
const SearchConsumer = "video-search"

// Index is the search read model of videos: DefaultAlias (or the
// configured alias) and the strict mapping IndexBody.
func Index(alias string) elastic.Index {
	if alias == "" {
		alias = DefaultAlias
	}
	return elastic.Index{Alias: alias, Body: IndexBody}
}

// NewSearch returns the search projection's handler writing to alias
// (DefaultAlias when empty): Document for every catalog video event, a
// batch in one bulk request.
func NewSearch(es *elastic.Client, alias string) (*elastic.Handler[any], error) {
	return elastic.NewHandler(es, Index(alias), document)
}

func document(ev *proj.Event, _ any) ([]byte, error) { return Document(ev) }

// Document returns the search document of the state an event carries: the
// video's fields, or a tombstone for a deletion.
func Document(ev *proj.Event) ([]byte, error) {
	v, deleted, err := videoOf(ev)
	if err != nil {
		return nil, err
	}
	if deleted {
		at := ev.OccurredAt
		if v.GetDeletedAt() != nil {
			at = v.GetDeletedAt().AsTime()
		}
		return elastic.Tombstone(at, map[string]any{
			"video_id": v.GetId(), "uploader_id": v.GetUploaderId(), "version": v.GetVersion(),
			"event_id": ev.ID.String(), "occurred_at": ev.OccurredAt.UTC().Format(time.RFC3339Nano),
		})
	}
	row, err := events.VideoToRow(v)
	if err != nil {
		return nil, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("video %s v%d: %w", ev.AggregateID, ev.AggregateVersion, err))
	}
	b, err := json.Marshal(map[string]any{
		"video_id":           row.ID.String(),
		"uploader_id":        row.UploaderID.String(),
		"title":              row.Title,
		"description":        row.Description,
		"duration_micros":    row.DurationMicros,
		"status":             row.Status,
		"media_status":       row.MediaStatus,
		"analysis_status":    row.AnalysisStatus,
		"version":            row.Version,
		"created_at":         row.CreatedAt.UTC().Format(time.RFC3339Nano),
		"updated_at":         row.UpdatedAt.UTC().Format(time.RFC3339Nano),
		elastic.FieldDeleted: false,
		"event_id":           ev.ID.String(),
		"occurred_at":        ev.OccurredAt.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return nil, proj.Permanent(proj.PayloadInvalid, err)
	}
	return b, nil
}
