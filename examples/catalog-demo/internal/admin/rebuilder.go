package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Rebuilder restates catalog.videos: VideoCreated for live videos at
// version 1, VideoUpdated (every state field in the mask) for later
// versions, VideoDeleted for deleted videos (the tombstone).
type Rebuilder struct{}

// Subject implements hook.Rebuilder.
func (Rebuilder) Subject() hook.Subject {
	return hook.Subject{Noun: "video", Source: "catalog.videos", Tombstone: "VideoDeleted", Encoder: events.Codec.Encode}
}

// CheckID implements hook.Rebuilder: a video id is a UUID.
func (Rebuilder) CheckID(id string) error {
	_, err := videoIDs([]string{id})
	return err
}

// Count implements hook.Rebuilder.
func (Rebuilder) Count(ctx context.Context, tx pgx.Tx, ids []string) (hook.Count, error) {
	only, err := videoIDs(ids)
	if err != nil {
		return hook.Count{}, err
	}
	n, err := catalogdb.New(tx).CountVideos(ctx, only)
	if err != nil {
		return hook.Count{}, fmt.Errorf("counting videos: %w", err)
	}
	return hook.Count{Total: n.Total, Deleted: n.Deleted}, nil
}

// Restate implements hook.Rebuilder: ListVideosForRestatement reads the
// page FOR SHARE, so each restatement carries the version its row has
// when the outbox row commits.
func (Rebuilder) Restate(ctx context.Context, tx pgx.Tx, after string, ids []string, limit int) ([]outbox.Event, error) {
	var from uuid.UUID
	if after != "" {
		u, err := uuid.Parse(after)
		if err != nil {
			return nil, fmt.Errorf("page cursor %q is not a video id: %w", after, err)
		}
		from = u
	}
	only, err := videoIDs(ids)
	if err != nil {
		return nil, err
	}
	rows, err := catalogdb.New(tx).ListVideosForRestatement(ctx, catalogdb.ListVideosForRestatementParams{
		AfterID: from, Ids: only, PageSize: int32(limit),
	})
	if err != nil {
		return nil, err
	}
	evs := make([]outbox.Event, 0, len(rows))
	for _, r := range rows {
		ev, err := restatement(r)
		if err != nil {
			return nil, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// videoIDs parses ids (never nil: the queries take an empty array as
// "all").
func videoIDs(ids []string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(ids))
	for _, s := range ids {
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, &hook.UsageError{Err: fmt.Errorf("%q is not a video id (UUID)", s)}
		}
		out = append(out, u)
	}
	return out, nil
}

// restatementMask lists every state field: a restatement restates them all.
var restatementMask = []string{"title", "description", "duration_micros", "status", "media_status", "analysis_status"}

// restatement is the state-carrying event re-stating row at its version.
func restatement(r catalogdb.Video) (outbox.Event, error) {
	v, err := events.VideoFromRow(r)
	if err != nil {
		return outbox.Event{}, fmt.Errorf("restating video %s: %w", r.ID, err)
	}
	var payload proto.Message
	switch {
	case r.DeletedAt.Valid:
		payload = &catalogv1.VideoDeleted{Video: v, Reason: "restatement (relayctl rebuild)"}
	case r.Version == 1:
		payload = &catalogv1.VideoCreated{Video: v}
	default:
		payload = &catalogv1.VideoUpdated{Video: v, ChangedFields: &fieldmaskpb.FieldMask{Paths: restatementMask}}
	}
	ev, err := events.Codec.Event(r.ID.String(), r.Version, payload, time.Time{}) // occurred now
	ev.Restatement = true
	return ev, err
}
