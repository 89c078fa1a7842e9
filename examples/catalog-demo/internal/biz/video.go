package biz

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/google/uuid"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
)

// Change is the outcome of a write: the stored state and the outbox event
// that records it.
type Change struct {
	Video *catalogv1.Video
	Event EventRef
}

// EventRef names the outbox event of a write.
type EventRef struct {
	ID         uuid.UUID
	Type       string
	Version    int64
	OccurredAt time.Time
}

// Mutation edits cur, the locked current state of a live video, in place
// and returns the paths of the Video fields whose value changed. An error
// aborts the write: nothing is stored and the error reaches the caller
// unchanged.
type Mutation func(cur *catalogv1.Video) (changed []string, err error)

// VideoRepo stores videos and appends their events. Every write method runs
// one transaction that changes catalog.videos (version + 1) and appends
// exactly one outbox event carrying the new state; on any error neither is
// stored. Unknown and deleted ids yield an error that Is ErrVideoNotFound.
type VideoRepo interface {
	// Create stores v (id, fields and statuses set by the caller) at
	// version 1 and appends VideoCreated.
	Create(ctx context.Context, v *catalogv1.Video) (*Change, error)
	// Update locks the video, applies mutate to its current state, stores
	// the result at version + 1 and appends VideoUpdated with the changed
	// fields.
	Update(ctx context.Context, id uuid.UUID, mutate Mutation) (*Change, error)
	// Delete locks the video, calls check (if not nil) with its current
	// state, tombstones it (deleted_at) at version + 1 and appends
	// VideoDeleted with reason.
	Delete(ctx context.Context, id uuid.UUID, check func(cur *catalogv1.Video) error, reason string) (*Change, error)
	// Get returns the live video.
	Get(ctx context.Context, id uuid.UUID) (*catalogv1.Video, error)
	// List returns up to limit live videos with ids greater than after,
	// ordered by id.
	List(ctx context.Context, after uuid.UUID, limit int) ([]*catalogv1.Video, error)
}

// VideoUsecase is the catalog's business logic.
type VideoUsecase struct {
	repo VideoRepo
}

// NewVideoUsecase returns a VideoUsecase storing through repo.
func NewVideoUsecase(repo VideoRepo) *VideoUsecase {
	return &VideoUsecase{repo: repo}
}

// Draft is a new video.
type Draft struct {
	UploaderID     string
	Title          string
	Description    string
	DurationMicros int64
	// Status defaults to DRAFT when UNSPECIFIED.
	Status catalogv1.VideoStatus
}

// Patch is a partial update: nil fields stay as they are.
type Patch struct {
	Title          *string
	Description    *string
	DurationMicros *int64
	Status         *catalogv1.VideoStatus
	MediaStatus    *catalogv1.MediaStatus
	AnalysisStatus *catalogv1.AnalysisStatus
	// ExpectedVersion, when set, refuses the update with a version conflict
	// unless the video is at exactly this version.
	ExpectedVersion *int64
}

// Create validates d and creates the video at version 1 with a new UUIDv7
// id, media and analysis pending.
func (uc *VideoUsecase) Create(ctx context.Context, d Draft) (*Change, error) {
	uploader, err := parseID("uploader_id", d.UploaderID)
	if err != nil {
		return nil, err
	}
	if d.Status == catalogv1.VideoStatus_VIDEO_STATUS_UNSPECIFIED {
		d.Status = catalogv1.VideoStatus_VIDEO_STATUS_DRAFT
	}
	if err := firstError(
		checkTitle(d.Title), checkDescription(d.Description),
		checkDuration(d.DurationMicros), checkVideoStatus(d.Status),
	); err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("generating video id: %w", err)
	}
	return uc.repo.Create(ctx, &catalogv1.Video{
		Id:             id.String(),
		UploaderId:     uploader.String(),
		Title:          d.Title,
		Description:    d.Description,
		DurationMicros: d.DurationMicros,
		Status:         d.Status,
		MediaStatus:    catalogv1.MediaStatus_MEDIA_STATUS_PENDING,
		AnalysisStatus: catalogv1.AnalysisStatus_ANALYSIS_STATUS_PENDING,
	})
}

// Update validates p and applies it to the live video id. Every accepted
// update stores a new version, even when the set fields equal the current
// values (the event's changed_fields is then empty).
func (uc *VideoUsecase) Update(ctx context.Context, id string, p Patch) (*Change, error) {
	vid, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return uc.repo.Update(ctx, vid, func(cur *catalogv1.Video) ([]string, error) {
		if err := checkExpected(p.ExpectedVersion, cur); err != nil {
			return nil, err
		}
		return p.apply(cur), nil
	})
}

// Delete tombstones the live video id. reason is recorded in the event.
func (uc *VideoUsecase) Delete(ctx context.Context, id string, expectedVersion *int64, reason string) (*Change, error) {
	vid, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	if err := firstError(checkExpectedVersion(expectedVersion), checkReason(reason)); err != nil {
		return nil, err
	}
	return uc.repo.Delete(ctx, vid, func(cur *catalogv1.Video) error {
		return checkExpected(expectedVersion, cur)
	}, reason)
}

// Get returns the live video id.
func (uc *VideoUsecase) Get(ctx context.Context, id string) (*catalogv1.Video, error) {
	vid, err := parseID("id", id)
	if err != nil {
		return nil, err
	}
	return uc.repo.Get(ctx, vid)
}

// Page sizes of List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 500
)

// List returns a page of live videos ordered by id and the token of the
// next page ("" on the last page). pageSize 0 means DefaultPageSize; larger
// than MaxPageSize is reduced to it.
func (uc *VideoUsecase) List(ctx context.Context, pageSize int32, pageToken string) ([]*catalogv1.Video, string, error) {
	limit, after, err := pageOf(pageSize, pageToken)
	if err != nil {
		return nil, "", err
	}
	videos, err := uc.repo.List(ctx, after, limit+1)
	if err != nil {
		return nil, "", err
	}
	return nextPage(videos, limit)
}

// pageOf is the limit and the id to continue after of a page request.
func pageOf(pageSize int32, pageToken string) (int, uuid.UUID, error) {
	if pageSize < 0 {
		return 0, uuid.Nil, invalid("page_size", "must be >= 0, got %d", pageSize)
	}
	limit := int(pageSize)
	if limit == 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	after, err := decodePageToken(pageToken)
	return limit, after, err
}

// nextPage cuts videos (up to limit+1, ordered by id) to limit and returns
// the next page's token ("" when nothing follows).
func nextPage(videos []*catalogv1.Video, limit int) ([]*catalogv1.Video, string, error) {
	if len(videos) <= limit {
		return videos, "", nil
	}
	videos = videos[:limit]
	last, err := uuid.Parse(videos[limit-1].GetId())
	if err != nil {
		return nil, "", fmt.Errorf("listing videos: stored id %q: %w", videos[limit-1].GetId(), err)
	}
	return videos, base64.RawURLEncoding.EncodeToString(last[:]), nil
}

func decodePageToken(tok string) (uuid.UUID, error) {
	if tok == "" {
		return uuid.Nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != 16 {
		return uuid.Nil, invalid("page_token", "malformed page token")
	}
	return uuid.UUID(b), nil
}

func checkExpected(expected *int64, cur *catalogv1.Video) error {
	if expected != nil && *expected != cur.GetVersion() {
		return versionConflict(*expected, cur.GetVersion())
	}
	return nil
}

// apply sets the fields of p on v and returns the paths that changed.
func (p Patch) apply(v *catalogv1.Video) []string {
	var changed []string
	set := func(path string, differs bool, assign func()) {
		if differs {
			assign()
			changed = append(changed, path)
		}
	}
	if p.Title != nil {
		set("title", *p.Title != v.Title, func() { v.Title = *p.Title })
	}
	if p.Description != nil {
		set("description", *p.Description != v.Description, func() { v.Description = *p.Description })
	}
	if p.DurationMicros != nil {
		set("duration_micros", *p.DurationMicros != v.DurationMicros, func() { v.DurationMicros = *p.DurationMicros })
	}
	if p.Status != nil {
		set("status", *p.Status != v.Status, func() { v.Status = *p.Status })
	}
	if p.MediaStatus != nil {
		set("media_status", *p.MediaStatus != v.MediaStatus, func() { v.MediaStatus = *p.MediaStatus })
	}
	if p.AnalysisStatus != nil {
		set("analysis_status", *p.AnalysisStatus != v.AnalysisStatus, func() { v.AnalysisStatus = *p.AnalysisStatus })
	}
	return changed
}
