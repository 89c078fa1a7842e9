package projection

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	proj "github.com/eventrelay/eventrelay/projection"
)

// VideosConsumer is the inbox consumer name of the Postgres read model.
const VideosConsumer = "video-projection"

// Videos is the Postgres read model video_projection: a
// proj.ExecFunc for every catalog video event type, so the engine sends a
// batch's upserts in one round trip.
type Videos struct{ proj.ExecFunc[any] }

var _ proj.TxBatchHandler = (*Videos)(nil)

// NewVideos returns the handler.
func NewVideos() *Videos { return &Videos{ExecFunc: upsertVideo} }

// upsertVideo upserts the video's state at the event's version. The upsert
// changes nothing when the projection holds that version or a newer one
// (Stale). A deletion writes the tombstone (deleted_at, taken from the
// payload or else occurred_at) the same way.
func upsertVideo(ctx context.Context, db proj.DBTX, ev *proj.Event, _ any) error {
	p, err := upsertParams(ev)
	if err != nil {
		return err
	}
	if _, err := catalogdb.New(db).UpsertVideoProjection(ctx, p); err != nil {
		return fmt.Errorf("upserting video_projection %s v%d: %w", ev.AggregateID, ev.AggregateVersion, err)
	}
	return nil
}

// upsertParams is the video's state at the event's version.
func upsertParams(ev *proj.Event) (catalogdb.UpsertVideoProjectionParams, error) {
	v, deleted, err := videoOf(ev)
	if err != nil {
		return catalogdb.UpsertVideoProjectionParams{}, err
	}
	row, err := events.VideoToRow(v)
	if err != nil {
		return catalogdb.UpsertVideoProjectionParams{}, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("video %s v%d: %w", ev.AggregateID, ev.AggregateVersion, err))
	}
	if deleted && !row.DeletedAt.Valid {
		row.DeletedAt = pgtype.Timestamptz{Time: ev.OccurredAt, Valid: true}
	}
	return catalogdb.UpsertVideoProjectionParams{
		VideoID:         row.ID,
		UploaderID:      row.UploaderID,
		Title:           row.Title,
		Description:     row.Description,
		DurationMicros:  row.DurationMicros,
		Status:          row.Status,
		MediaStatus:     row.MediaStatus,
		AnalysisStatus:  row.AnalysisStatus,
		Version:         row.Version,
		CreatedAt:       row.CreatedAt,
		SourceUpdatedAt: row.UpdatedAt,
		DeletedAt:       row.DeletedAt,
		LastEventID:     ev.ID,
		OccurredAt:      ev.OccurredAt,
	}, nil
}
