package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/consistency"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/projection"
)

// videoReadModel reads video_projection, the projector's Postgres read
// model.
type videoReadModel struct {
	data *Data
}

// NewVideoReadModel returns the Postgres biz.VideoReadModel.
func NewVideoReadModel(d *Data) biz.VideoReadModel {
	return &videoReadModel{data: d}
}

func (m *videoReadModel) Get(ctx context.Context, id uuid.UUID) (*catalogv1.Video, error) {
	row, err := catalogdb.New(m.data.pool).GetVideoProjection(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.DeletedAt.Valid) {
		return nil, biz.VideoNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading video %s from the read model: %w", id, projection.PostgresError(err))
	}
	return fromProjection(row)
}

func (m *videoReadModel) List(ctx context.Context, after uuid.UUID, limit int) ([]*catalogv1.Video, error) {
	rows, err := catalogdb.New(m.data.pool).ListVideoProjections(ctx, catalogdb.ListVideoProjectionsParams{AfterID: after, PageSize: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("listing videos of the read model: %w", projection.PostgresError(err))
	}
	out := make([]*catalogv1.Video, 0, len(rows))
	for _, row := range rows {
		v, err := fromProjection(row)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// VideosLookup is the consistency.Lookup of the Postgres read model: the
// version video_projection holds (a tombstone's included).
func VideosLookup(d *Data) consistency.Lookup {
	return func(ctx context.Context, _, aggregateID string) (int64, error) {
		id, err := uuid.Parse(aggregateID)
		if err != nil {
			return 0, nil // no video has that id: never satisfied
		}
		v, err := catalogdb.New(d.pool).VideoProjectionVersion(ctx, id)
		if err != nil {
			return 0, projection.PostgresError(err)
		}
		return v, nil
	}
}

func fromProjection(p catalogdb.VideoProjection) (*catalogv1.Video, error) {
	return fromRow(catalogdb.Video{
		ID: p.VideoID, UploaderID: p.UploaderID, Title: p.Title, Description: p.Description,
		DurationMicros: p.DurationMicros, Status: p.Status, MediaStatus: p.MediaStatus, AnalysisStatus: p.AnalysisStatus,
		Version: p.Version, CreatedAt: p.CreatedAt, UpdatedAt: p.SourceUpdatedAt, DeletedAt: p.DeletedAt,
	})
}
