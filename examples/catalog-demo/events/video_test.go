package events_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
)

func TestVideoRowRoundTrip(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := catalogdb.Video{
		ID: uuid.New(), UploaderID: uuid.New(), Title: "t", Description: "d", DurationMicros: 42,
		Status: "published", MediaStatus: "ready", AnalysisStatus: "processing", Version: 3,
		CreatedAt: now.Add(-time.Hour), UpdatedAt: now, DeletedAt: pgtype.Timestamptz{Time: now, Valid: true},
	}
	v, err := events.VideoFromRow(row)
	if err != nil {
		t.Fatal(err)
	}
	if v.GetStatus() != catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED || v.GetMediaStatus() != catalogv1.MediaStatus_MEDIA_STATUS_READY ||
		v.GetAnalysisStatus() != catalogv1.AnalysisStatus_ANALYSIS_STATUS_PROCESSING || v.GetDeletedAt() == nil {
		t.Errorf("VideoFromRow = %v", v)
	}
	back, err := events.VideoToRow(v)
	if err != nil {
		t.Fatal(err)
	}
	if back.CreatedAt.Equal(row.CreatedAt) && back.UpdatedAt.Equal(row.UpdatedAt) && back.DeletedAt.Time.Equal(row.DeletedAt.Time) {
		back.CreatedAt, back.UpdatedAt, back.DeletedAt.Time = row.CreatedAt, row.UpdatedAt, row.DeletedAt.Time
	}
	if back != row {
		t.Errorf("round trip: %+v, want %+v", back, row)
	}
	again, _ := events.VideoFromRow(back)
	if !proto.Equal(again, v) {
		t.Errorf("second round trip differs: %v vs %v", again, v)
	}
}

func TestVideoMappingNamesTheField(t *testing.T) {
	if _, err := events.VideoFromRow(catalogdb.Video{Status: "draft", MediaStatus: "done", AnalysisStatus: "ready"}); err == nil ||
		!strings.Contains(err.Error(), "media_status") {
		t.Errorf("unknown stored media_status: %v", err)
	}
	base := &catalogv1.Video{
		Id: uuid.NewString(), UploaderId: uuid.NewString(),
		Status:         catalogv1.VideoStatus_VIDEO_STATUS_DRAFT,
		MediaStatus:    catalogv1.MediaStatus_MEDIA_STATUS_PENDING,
		AnalysisStatus: catalogv1.AnalysisStatus_ANALYSIS_STATUS_PENDING,
	}
	for field, mutate := range map[string]func(*catalogv1.Video){
		"id":              func(v *catalogv1.Video) { v.Id = "nope" },
		"uploader_id":     func(v *catalogv1.Video) { v.UploaderId = "" },
		"status":          func(v *catalogv1.Video) { v.Status = catalogv1.VideoStatus_VIDEO_STATUS_UNSPECIFIED },
		"media_status":    func(v *catalogv1.Video) { v.MediaStatus = 99 },
		"analysis_status": func(v *catalogv1.Video) { v.AnalysisStatus = 0 },
	} {
		v := proto.Clone(base).(*catalogv1.Video)
		mutate(v)
		if _, err := events.VideoToRow(v); err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: error %v does not name the field", field, err)
		}
	}
	if _, err := events.VideoToRow(base); err != nil {
		t.Errorf("valid video: %v", err)
	}
}

func TestEnumsCoverEveryNamedValue(t *testing.T) {
	for n := range catalogv1.VideoStatus_name {
		v := catalogv1.VideoStatus(n)
		text, err := events.VideoStatus.Text(v)
		if v == catalogv1.VideoStatus_VIDEO_STATUS_UNSPECIFIED {
			if err == nil {
				t.Errorf("UNSPECIFIED has text %q", text)
			}
			continue
		}
		if back, err2 := events.VideoStatus.Parse(text); err != nil || err2 != nil || back != v {
			t.Errorf("%v: text %q (%v), parsed back %v (%v)", v, text, err, back, err2)
		}
	}
	for n := range catalogv1.MediaStatus_name {
		if v := catalogv1.MediaStatus(n); v != 0 && !events.MediaStatus.Known(v) {
			t.Errorf("media status %v has no stored text", v)
		}
	}
	for n := range catalogv1.AnalysisStatus_name {
		if v := catalogv1.AnalysisStatus(n); v != 0 && !events.AnalysisStatus.Known(v) {
			t.Errorf("analysis status %v has no stored text", v)
		}
	}
}
