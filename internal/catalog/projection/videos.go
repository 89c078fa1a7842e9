package projection

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	proj "github.com/eventrelay/eventrelay/projection"
)

// VideosConsumer is the inbox consumer name of the Postgres read model.
const VideosConsumer = "video-projection"

// Videos is the Postgres read model video_projection. It is a
// proj.TxHandler for every catalog video event type.
type Videos struct{}

// NewVideos returns the handler.
func NewVideos() *Videos { return &Videos{} }

// HandleTx upserts the video's state at the event's version, in tx. The
// upsert changes nothing when the projection holds that version or a newer
// one (Stale). A deletion writes the tombstone (deleted_at, taken from the
// payload or else occurred_at) the same way.
func (*Videos) HandleTx(ctx context.Context, tx pgx.Tx, ev *proj.Event) (proj.Outcome, error) {
	e, v, err := videoOf(ev)
	if err != nil {
		return 0, err
	}
	row, err := events.VideoToRow(v)
	if err != nil {
		return 0, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("video %s v%d: %w", ev.AggregateID, ev.Version, err))
	}
	if _, deleted := e.GetPayload().(*catalogv1.Event_VideoDeleted); deleted && !row.DeletedAt.Valid {
		row.DeletedAt = pgtype.Timestamptz{Time: ev.OccurredAt, Valid: true}
	}
	n, err := inboxdb.New(tx).UpsertVideoProjection(ctx, inboxdb.UpsertVideoProjectionParams{
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
	})
	if err != nil {
		return 0, fmt.Errorf("upserting video_projection %s v%d: %w", ev.AggregateID, ev.Version, postgres.Classify(err))
	}
	if n == 0 {
		return proj.Stale, nil
	}
	return proj.Applied, nil
}
