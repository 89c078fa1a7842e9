package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/eventrelay/eventrelay/elastic"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	proj "github.com/eventrelay/eventrelay/projection"
)

// SearchConsumer is the inbox consumer name of the search index.
const SearchConsumer = "video-search"

// Search is the Elasticsearch search index of videos. It is a
// proj.BatchHandler for every catalog video event type: one bulk request
// per batch, each document at the aggregate version with
// version_type=external. A deletion is indexed as a tombstone document
// (deleted: true), never deleted, so its version is never forgotten.
type Search struct {
	es    *elastic.Client
	alias string

	mu      sync.Mutex
	ensured bool
}

// NewSearch returns the handler writing to alias (DefaultAlias when
// empty).
func NewSearch(es *elastic.Client, alias string) *Search {
	if alias == "" {
		alias = DefaultAlias
	}
	return &Search{es: es, alias: alias}
}

// Alias is the alias written to.
func (s *Search) Alias() string { return s.alias }

// HandleBatch implements proj.BatchHandler. A 409 (an equal or newer
// version is indexed) is Stale; 429 and 5xx fail the batch transiently; a
// document the mapping refuses (400) fails alone with mapping_error.
func (s *Search) HandleBatch(ctx context.Context, evs []*proj.Event) ([]proj.Result, error) {
	if err := s.ensureIndex(ctx); err != nil {
		return nil, err
	}
	results := make([]proj.Result, len(evs))
	docs := make([]elastic.Doc, 0, len(evs))
	pos := make([]int, 0, len(evs))
	for i, ev := range evs {
		src, err := Document(ev)
		if err != nil {
			results[i].Err = err
			continue
		}
		docs = append(docs, elastic.Doc{ID: ev.AggregateID, Version: ev.Version, Source: src})
		pos = append(pos, i)
	}
	items, err := s.es.BulkIndex(ctx, s.alias, docs)
	if err != nil {
		return nil, err
	}
	for k, it := range items {
		r := &results[pos[k]]
		switch {
		case it.Err != nil:
			r.Err = it.Err
		case it.Stale:
			r.Outcome = proj.Stale
		default:
			r.Outcome = proj.Applied
		}
	}
	return results, nil
}

// ensureIndex creates the index behind the alias on first use (and keeps
// trying on later batches while Elasticsearch is unreachable). Failing to
// create it is never the messages' fault: the error is transient.
func (s *Search) ensureIndex(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ensured {
		return nil
	}
	if _, err := s.es.EnsureIndex(ctx, s.alias, IndexBody); err != nil {
		return proj.Retry(fmt.Errorf("ensuring search index %s: %w", s.alias, err))
	}
	s.ensured = true
	return nil
}

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
		return nil, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("video %s v%d: %w", ev.AggregateID, ev.Version, err))
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
