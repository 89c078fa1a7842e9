package projection

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/eventrelay/eventrelay/internal/catalog/catalogdb"
	"github.com/eventrelay/eventrelay/internal/catalog/events"
	"github.com/eventrelay/eventrelay/internal/postgres"
	proj "github.com/eventrelay/eventrelay/projection"
)

// VideosConsumer is the inbox consumer name of the Postgres read model.
const VideosConsumer = "video-projection"

// Videos is the Postgres read model video_projection. It is a
// proj.TxBatchHandler for every catalog video event type.
type Videos struct{}

var _ proj.TxBatchHandler = (*Videos)(nil)

// NewVideos returns the handler.
func NewVideos() *Videos { return &Videos{} }

// HandleTx upserts the video's state at the event's version, in tx. The
// upsert changes nothing when the projection holds that version or a newer
// one (Stale). A deletion writes the tombstone (deleted_at, taken from the
// payload or else occurred_at) the same way.
func (*Videos) HandleTx(ctx context.Context, tx pgx.Tx, ev *proj.Event) (proj.Outcome, error) {
	p, err := upsertParams(ev)
	if err != nil {
		return 0, err
	}
	n, err := catalogdb.New(tx).UpsertVideoProjection(ctx, p)
	if err != nil {
		return 0, fmt.Errorf("upserting video_projection %s v%d: %w", ev.AggregateID, ev.Version, postgres.Classify(err))
	}
	return outcome(n), nil
}

// HandleTxBatch is HandleTx for many events in one round trip: the upserts
// are pipelined. An event that does not decode fails its Result (the engine
// then redoes the batch event by event); a failed statement fails the call.
func (*Videos) HandleTxBatch(ctx context.Context, tx pgx.Tx, evs []*proj.Event) ([]proj.Result, error) {
	out := make([]proj.Result, len(evs))
	b := &pgx.Batch{}
	q := catalogdb.New(postgres.Pipeline{Batch: b})
	for i, ev := range evs {
		p, err := upsertParams(ev)
		if err != nil {
			out[i].Err = err
			return out, nil
		}
		if _, err := q.UpsertVideoProjection(ctx, p); err != nil {
			return nil, fmt.Errorf("queueing video_projection upserts: %w", err)
		}
	}
	br := tx.SendBatch(ctx, b)
	for i, ev := range evs {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, fmt.Errorf("upserting video_projection %s v%d: %w", ev.AggregateID, ev.Version, postgres.Classify(err))
		}
		out[i].Outcome = outcome(tag.RowsAffected())
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("upserting %d video_projection rows: %w", len(evs), postgres.Classify(err))
	}
	return out, nil
}

// upsertParams is the video's state at the event's version.
func upsertParams(ev *proj.Event) (catalogdb.UpsertVideoProjectionParams, error) {
	v, deleted, err := videoOf(ev)
	if err != nil {
		return catalogdb.UpsertVideoProjectionParams{}, err
	}
	row, err := events.VideoToRow(v)
	if err != nil {
		return catalogdb.UpsertVideoProjectionParams{}, proj.Permanent(proj.PayloadInvalid, fmt.Errorf("video %s v%d: %w", ev.AggregateID, ev.Version, err))
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

// outcome: the guarded upsert touched no row when the projection already
// held the version or a newer one.
func outcome(rowsAffected int64) proj.Outcome {
	if rowsAffected == 0 {
		return proj.Stale
	}
	return proj.Applied
}
