package data

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/internal/biz"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

type videoRepo struct {
	data *Data
}

// NewVideoRepo returns the Postgres biz.VideoRepo.
func NewVideoRepo(d *Data) biz.VideoRepo {
	return &videoRepo{data: d}
}

func (r *videoRepo) Create(ctx context.Context, v *catalogv1.Video) (*biz.Change, error) {
	row, err := events.VideoToRow(v)
	if err != nil {
		return nil, fmt.Errorf("creating video: %w", projection.Permanent(projection.PayloadInvalid, err))
	}
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		stored, err := catalogdb.New(tx).InsertVideo(ctx, catalogdb.InsertVideoParams{
			ID:             row.ID,
			UploaderID:     row.UploaderID,
			Title:          row.Title,
			Description:    row.Description,
			DurationMicros: row.DurationMicros,
			Status:         row.Status,
			MediaStatus:    row.MediaStatus,
			AnalysisStatus: row.AnalysisStatus,
		})
		if err != nil {
			return nil, fmt.Errorf("inserting video %s: %w", row.ID, projection.PostgresError(err))
		}
		return r.record(ctx, tx, stored, func(v *catalogv1.Video) proto.Message {
			return &catalogv1.VideoCreated{Video: v}
		})
	})
}

func (r *videoRepo) Update(ctx context.Context, id uuid.UUID, mutate biz.Mutation) (*biz.Change, error) {
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		q := catalogdb.New(tx)
		cur, err := lockLive(ctx, q, id)
		if err != nil {
			return nil, err
		}
		changed, err := mutate(cur)
		if err != nil {
			return nil, err
		}
		next, err := events.VideoToRow(cur)
		if err != nil {
			return nil, fmt.Errorf("updating video %s: %w", id, projection.Permanent(projection.PayloadInvalid, err))
		}
		stored, err := q.UpdateVideo(ctx, catalogdb.UpdateVideoParams{
			ID:             id,
			Title:          next.Title,
			Description:    next.Description,
			DurationMicros: next.DurationMicros,
			Status:         next.Status,
			MediaStatus:    next.MediaStatus,
			AnalysisStatus: next.AnalysisStatus,
		})
		if err != nil {
			return nil, fmt.Errorf("updating video %s: %w", id, projection.PostgresError(err))
		}
		return r.record(ctx, tx, stored, func(v *catalogv1.Video) proto.Message {
			return &catalogv1.VideoUpdated{Video: v, ChangedFields: &fieldmaskpb.FieldMask{Paths: changed}}
		})
	})
}

func (r *videoRepo) Delete(ctx context.Context, id uuid.UUID, check func(*catalogv1.Video) error, reason string) (*biz.Change, error) {
	return r.write(ctx, func(tx pgx.Tx) (*biz.Change, error) {
		q := catalogdb.New(tx)
		cur, err := lockLive(ctx, q, id)
		if err != nil {
			return nil, err
		}
		if check != nil {
			if err := check(cur); err != nil {
				return nil, err
			}
		}
		stored, err := q.DeleteVideo(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("deleting video %s: %w", id, projection.PostgresError(err))
		}
		return r.record(ctx, tx, stored, func(v *catalogv1.Video) proto.Message {
			return &catalogv1.VideoDeleted{Video: v, Reason: reason}
		})
	})
}

func (r *videoRepo) Get(ctx context.Context, id uuid.UUID) (*catalogv1.Video, error) {
	row, err := catalogdb.New(r.data.pool).GetVideo(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.DeletedAt.Valid) {
		return nil, biz.VideoNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("reading video %s: %w", id, projection.PostgresError(err))
	}
	return fromRow(row)
}

func (r *videoRepo) List(ctx context.Context, after uuid.UUID, limit int) ([]*catalogv1.Video, error) {
	rows, err := catalogdb.New(r.data.pool).ListVideos(ctx, catalogdb.ListVideosParams{AfterID: after, PageSize: int32(limit)})
	if err != nil {
		return nil, fmt.Errorf("listing videos: %w", projection.PostgresError(err))
	}
	out := make([]*catalogv1.Video, 0, len(rows))
	for _, row := range rows {
		v, err := fromRow(row)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// lockLive takes the row lock that serializes the writers of one video
// (versions stay contiguous, one outbox row each) and returns its state.
func lockLive(ctx context.Context, q *catalogdb.Queries, id uuid.UUID) (*catalogv1.Video, error) {
	row, err := q.LockVideo(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && row.DeletedAt.Valid) {
		return nil, biz.VideoNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("locking video %s: %w", id, projection.PostgresError(err))
	}
	return fromRow(row)
}

func fromRow(row catalogdb.Video) (*catalogv1.Video, error) {
	v, err := events.VideoFromRow(row)
	if err != nil {
		return nil, fmt.Errorf("reading stored video: %w", projection.Permanent(projection.MappingError, err))
	}
	return v, nil
}

// record appends the event of the stored row in tx. The event's
// occurred_at is the row's updated_at: the time of the change.
func (r *videoRepo) record(ctx context.Context, tx pgx.Tx, stored catalogdb.Video, payload func(*catalogv1.Video) proto.Message) (*biz.Change, error) {
	v, err := fromRow(stored)
	if err != nil {
		return nil, err
	}
	ev, err := events.Codec.Event(v.GetId(), stored.Version, payload(v), stored.UpdatedAt)
	if err != nil {
		return nil, err
	}
	ev.Topic = "" // the writer routes it: outbox.topic (OUTBOX_TOPIC)
	written, err := r.data.writer.InsertTx(ctx, tx, ev)
	if errors.Is(err, outbox.ErrInvalidEvent) {
		return nil, fmt.Errorf("appending %s: %w", ev.EventType, projection.Permanent(projection.PayloadInvalid, err))
	}
	if err != nil {
		return nil, fmt.Errorf("appending %s: %w", ev.EventType, projection.PostgresError(err))
	}
	w := written[0]
	return &biz.Change{Video: v, Event: biz.EventRef{ID: w.EventID, Type: w.EventType, Version: w.AggregateVersion, OccurredAt: w.OccurredAt}}, nil
}

// write runs fn in one transaction and logs the committed change.
func (r *videoRepo) write(ctx context.Context, fn func(pgx.Tx) (*biz.Change, error)) (*biz.Change, error) {
	var ch *biz.Change
	err := r.data.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		ch, err = fn(tx)
		return err
	})
	if err != nil {
		return nil, err
	}
	r.data.log.InfoContext(ctx, "video event appended",
		"event_id", ch.Event.ID.String(),
		"aggregate_type", events.AggregateType,
		"aggregate_id", ch.Video.GetId(),
		"event_type", ch.Event.Type,
		"version", ch.Event.Version,
	)
	return ch, nil
}
