package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/elastic"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	proj "github.com/eventrelay/eventrelay/projection"
)

// reindexPage is how many projection rows are read at a time.
const reindexPage = 500

// Search is the search index's side of relayctl: `rebuild --reindex`
// rebuilds it from video_projection, `verify` compares it with
// catalog.videos.
var Search = elastic.Admin{Index: catproj.Index(""), Source: "video_projection", Documents: searchDocuments, Versions: videoVersions}

// searchDocuments emits the search document of every projection row at
// the row's version.
func searchDocuments(ctx context.Context, db proj.DBTX, emit func(elastic.Doc) error) error {
	q := catalogdb.New(db)
	var after uuid.UUID
	for {
		rows, err := q.ListVideoProjection(ctx, catalogdb.ListVideoProjectionParams{AfterID: after, PageSize: reindexPage})
		if err != nil {
			return fmt.Errorf("reading video_projection: %w", proj.PostgresError(err))
		}
		for _, r := range rows {
			src, err := searchDocument(r)
			if err != nil {
				return err
			}
			if err := emit(elastic.Doc{ID: r.VideoID.String(), Version: r.Version, Source: src}); err != nil {
				return err
			}
			after = r.VideoID
		}
		if len(rows) < reindexPage {
			return nil
		}
	}
}

// searchDocument is the search projection's document for a projection row:
// the row's state is wrapped in the event that produced it (last_event_id,
// occurred_at) and handed to catproj.Document, so reindexed documents are
// the ones the projector writes.
func searchDocument(r catalogdb.VideoProjection) ([]byte, error) {
	v, err := events.VideoFromRow(catalogdb.Video{
		ID: r.VideoID, UploaderID: r.UploaderID, Title: r.Title, Description: r.Description,
		DurationMicros: r.DurationMicros, Status: r.Status, MediaStatus: r.MediaStatus,
		AnalysisStatus: r.AnalysisStatus, Version: r.Version, CreatedAt: r.CreatedAt,
		UpdatedAt: r.SourceUpdatedAt, DeletedAt: r.DeletedAt,
	})
	if err != nil {
		return nil, fmt.Errorf("video_projection row %s: %w", r.VideoID, err)
	}
	typ, payload := events.TypeVideoUpdated, any(&catalogv1.VideoUpdated{Video: v})
	if r.DeletedAt.Valid {
		typ, payload = events.TypeVideoDeleted, &catalogv1.VideoDeleted{Video: v}
	}
	src, err := catproj.Document(&proj.Event{
		ID: r.LastEventID, Type: typ, AggregateType: events.AggregateType, AggregateID: r.VideoID.String(),
		AggregateVersion: r.Version, SchemaVersion: events.SchemaVersion, OccurredAt: r.OccurredAt, Payload: payload,
	})
	if err != nil {
		return nil, fmt.Errorf("video_projection row %s: %w", r.VideoID, err)
	}
	return src, nil
}
