package projection_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/catalog/projection/projectiontest"
	"github.com/eventrelay/eventrelay/internal/projector"
)

func TestVideosSameEventThreeTimesAppliedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	id := uuid.New()
	m := projectiontest.Event(t, id, 1, false)
	h.publish(m, m, m)
	h.eventually(10*time.Second, "3 deliveries settled", func() bool {
		return h.metric("projector_applied_total", "videos")+h.metric("projector_duplicate_total", "videos") == 3
	})
	if a, d := h.metric("projector_applied_total", "videos"), h.metric("projector_duplicate_total", "videos"); a != 1 || d != 2 {
		t.Fatalf("applied=%v duplicate=%v, want 1 and 2", a, d)
	}
	if n := h.inboxCount("video-projection"); n != 1 {
		t.Fatalf("inbox rows = %d, want 1", n)
	}
	if r, ok := h.row(id); !ok || r.Version != 1 || r.LastEventID != m.EventID {
		t.Fatalf("projection row = %+v (found %v)", r, ok)
	}
}

func TestVideosOlderVersionIsStale(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	id := uuid.New()
	h.publish(projectiontest.Event(t, id, 1, false), projectiontest.Event(t, id, 3, false))
	h.eventually(10*time.Second, "v3 applied", func() bool { r, ok := h.row(id); return ok && r.Version == 3 })
	h.publish(projectiontest.Event(t, id, 2, false))
	h.eventually(10*time.Second, "v2 counted stale", func() bool { return h.metric("projector_stale_skipped_total", "videos") == 1 })
	r, _ := h.row(id)
	if r.Version != 3 || r.Title != projectiontest.Video(id, 3).Title {
		t.Fatalf("projection = v%d %q, want v3", r.Version, r.Title)
	}
}

func TestVideosDeleteIsNotResurrectedByStaleUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	id := uuid.New()
	h.publish(projectiontest.Event(t, id, 1, false))
	h.eventually(10*time.Second, "v1 applied", func() bool { _, ok := h.row(id); return ok })
	h.publish(projectiontest.Event(t, id, 4, true))
	h.eventually(10*time.Second, "v4 tombstone", func() bool { r, _ := h.row(id); return r.Version == 4 })
	h.publish(projectiontest.Event(t, id, 3, false))
	h.eventually(10*time.Second, "v3 counted stale", func() bool { return h.metric("projector_stale_skipped_total", "videos") == 1 })
	r, _ := h.row(id)
	if r.Version != 4 || !r.DeletedAt.Valid {
		t.Fatalf("projection = v%d deleted_at=%v, want the v4 tombstone", r.Version, r.DeletedAt)
	}
}

func TestVideosBadInputIsDeadLetteredAndProjectorKeepsGoing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))

	malformed := projectiontest.Event(t, uuid.New(), 1, false)
	malformed.Data = []byte{0xff, 0x01, 0x02, 'n', 'o', 't', ' ', 'p', 'r', 'o', 't', 'o'}
	missing := projectiontest.Event(t, uuid.New(), 1, false)
	delete(missing.Attributes, "aggregate_id")
	schema := projectiontest.Event(t, uuid.New(), 1, false)
	schema.Attributes["schema_version"] = "7"
	unknown := projectiontest.Event(t, uuid.New(), 1, false)
	unknown.Attributes["event_type"] = "catalog.video.exploded"
	mismatch := projectiontest.Event(t, uuid.New(), 1, false)
	mismatch.Attributes["version"] = "2"
	want := map[string]string{
		malformed.EventID.String(): "payload_invalid",
		missing.EventID.String():   "attributes_missing",
		schema.EventID.String():    "schema_unsupported",
		unknown.EventID.String():   "event_type_unknown",
		mismatch.EventID.String():  "payload_invalid",
	}
	good := uuid.New()
	h.publish(malformed, missing, schema, unknown, mismatch, projectiontest.Event(t, good, 1, false))

	dls := h.deadLetters("videos", len(want), 15*time.Second)
	for _, m := range dls {
		id := m.Attributes["event_id"]
		if m.Attributes[projector.AttrErrorReason] != want[id] {
			t.Errorf("dead letter of %s: error_reason %q, want %q (error: %s)", id, m.Attributes[projector.AttrErrorReason], want[id], m.Attributes[projector.AttrError])
		}
		if m.Attributes[projector.AttrProjection] != "videos" || m.Attributes[projector.AttrOriginalMessageID] == "" ||
			m.Attributes[projector.AttrError] == "" || m.Attributes[projector.AttrDeliveryAttempt] == "" {
			t.Errorf("dead letter of %s lacks attributes: %v", id, m.Attributes)
		}
		delete(want, id)
	}
	if len(want) != 0 {
		t.Errorf("no dead letter for %v", want)
	}
	if _, ok := h.row(good); !ok {
		h.eventually(10*time.Second, "the good event applied", func() bool { _, ok := h.row(good); return ok })
	}
	if n := h.metric("projector_dead_lettered_total", "videos"); n != 5 {
		t.Fatalf("dead_lettered_total = %v, want 5", n)
	}
	if n := h.metric("projector_dead_lettered_total", "videos", "reason", "schema_unsupported"); n != 1 {
		t.Fatalf("dead_lettered_total{reason=schema_unsupported} = %v, want 1", n)
	}
	// Acked: nothing comes back.
	time.Sleep(300 * time.Millisecond)
	if n := h.metric("projector_dead_lettered_total", "videos"); n != 5 {
		t.Fatalf("dead letters redelivered: dead_lettered_total = %v, want 5", n)
	}
}
