package events

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/types/known/timestamppb"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
)

// Enum maps a proto enum to the text Postgres stores for it (the CHECK
// constraints of catalog.videos and the columns of video_projection). The
// UNSPECIFIED value (0) has no text: it is never stored.
type Enum[E ~int32] struct {
	field    string
	toText   map[E]string
	fromText map[string]E
}

func newEnum[E ~int32](field string, texts map[E]string) Enum[E] {
	from := make(map[string]E, len(texts))
	for v, t := range texts {
		from[t] = v
	}
	return Enum[E]{field: field, toText: texts, fromText: from}
}

// The status enums of a video and their stored text.
var (
	VideoStatus = newEnum("status", map[catalogv1.VideoStatus]string{
		catalogv1.VideoStatus_VIDEO_STATUS_DRAFT:     "draft",
		catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED: "published",
		catalogv1.VideoStatus_VIDEO_STATUS_ARCHIVED:  "archived",
	})
	MediaStatus = newEnum("media_status", map[catalogv1.MediaStatus]string{
		catalogv1.MediaStatus_MEDIA_STATUS_PENDING:    "pending",
		catalogv1.MediaStatus_MEDIA_STATUS_PROCESSING: "processing",
		catalogv1.MediaStatus_MEDIA_STATUS_READY:      "ready",
		catalogv1.MediaStatus_MEDIA_STATUS_FAILED:     "failed",
	})
	AnalysisStatus = newEnum("analysis_status", map[catalogv1.AnalysisStatus]string{
		catalogv1.AnalysisStatus_ANALYSIS_STATUS_PENDING:    "pending",
		catalogv1.AnalysisStatus_ANALYSIS_STATUS_PROCESSING: "processing",
		catalogv1.AnalysisStatus_ANALYSIS_STATUS_READY:      "ready",
		catalogv1.AnalysisStatus_ANALYSIS_STATUS_FAILED:     "failed",
	})
)

// Field is the Video field the enum belongs to ("status", "media_status",
// "analysis_status").
func (e Enum[E]) Field() string { return e.field }

// Known reports whether v has a stored text (UNSPECIFIED and values this
// build does not know have none).
func (e Enum[E]) Known(v E) bool {
	_, ok := e.toText[v]
	return ok
}

// Text returns the stored text of v, or an error naming the field for
// UNSPECIFIED and unknown values.
func (e Enum[E]) Text(v E) (string, error) {
	t, ok := e.toText[v]
	if !ok {
		return "", fmt.Errorf("%s: no stored text for enum value %d", e.field, int32(v))
	}
	return t, nil
}

// Parse returns the enum value of a stored text, or an error naming the
// field.
func (e Enum[E]) Parse(text string) (E, error) {
	v, ok := e.fromText[text]
	if !ok {
		return 0, fmt.Errorf("%s: unknown stored value %q", e.field, text)
	}
	return v, nil
}

// VideoFromRow returns the full state of a catalog.videos row as the
// contract's Video (the state every catalog event carries). It fails only
// on a status text the CHECK constraints should have refused.
func VideoFromRow(r catalogdb.Video) (*catalogv1.Video, error) {
	status, err := VideoStatus.Parse(r.Status)
	if err != nil {
		return nil, fmt.Errorf("video %s: %w", r.ID, err)
	}
	media, err := MediaStatus.Parse(r.MediaStatus)
	if err != nil {
		return nil, fmt.Errorf("video %s: %w", r.ID, err)
	}
	analysis, err := AnalysisStatus.Parse(r.AnalysisStatus)
	if err != nil {
		return nil, fmt.Errorf("video %s: %w", r.ID, err)
	}
	v := &catalogv1.Video{
		Id:             r.ID.String(),
		UploaderId:     r.UploaderID.String(),
		Title:          r.Title,
		Description:    r.Description,
		DurationMicros: r.DurationMicros,
		Status:         status,
		MediaStatus:    media,
		AnalysisStatus: analysis,
		Version:        r.Version,
		CreatedAt:      timestamppb.New(r.CreatedAt),
		UpdatedAt:      timestamppb.New(r.UpdatedAt),
	}
	if r.DeletedAt.Valid {
		v.DeletedAt = timestamppb.New(r.DeletedAt.Time)
	}
	return v, nil
}

// VideoToRow is the inverse of VideoFromRow. Ids must be UUIDs and enums
// known; errors name the field. Missing timestamps become the zero time
// (created_at, updated_at) or NULL (deleted_at).
func VideoToRow(v *catalogv1.Video) (catalogdb.Video, error) {
	id, err := uuid.Parse(v.GetId())
	if err != nil {
		return catalogdb.Video{}, fmt.Errorf("id: %q is not a UUID", v.GetId())
	}
	uploader, err := uuid.Parse(v.GetUploaderId())
	if err != nil {
		return catalogdb.Video{}, fmt.Errorf("uploader_id: %q is not a UUID", v.GetUploaderId())
	}
	status, err := VideoStatus.Text(v.GetStatus())
	if err != nil {
		return catalogdb.Video{}, err
	}
	media, err := MediaStatus.Text(v.GetMediaStatus())
	if err != nil {
		return catalogdb.Video{}, err
	}
	analysis, err := AnalysisStatus.Text(v.GetAnalysisStatus())
	if err != nil {
		return catalogdb.Video{}, err
	}
	r := catalogdb.Video{
		ID:             id,
		UploaderID:     uploader,
		Title:          v.GetTitle(),
		Description:    v.GetDescription(),
		DurationMicros: v.GetDurationMicros(),
		Status:         status,
		MediaStatus:    media,
		AnalysisStatus: analysis,
		Version:        v.GetVersion(),
		CreatedAt:      timeOf(v.GetCreatedAt()),
		UpdatedAt:      timeOf(v.GetUpdatedAt()),
	}
	if v.GetDeletedAt() != nil {
		r.DeletedAt = pgtype.Timestamptz{Time: v.GetDeletedAt().AsTime(), Valid: true}
	}
	return r, nil
}

func timeOf(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}
