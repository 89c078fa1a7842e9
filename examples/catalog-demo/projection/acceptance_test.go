package projection_test

import (
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/elastic/elastictest"
	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/projection/projectiontest"
)

func TestSameEventThreeTimesAppliedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	_, es := h.search(batchConfig(10), elastictest.Options{}, nil)
	id := uuid.New()
	m := projectiontest.Event(t, id, 1, false)
	h.publish(m, m, m)
	for _, p := range []string{"videos", "search"} {
		h.eventually(10*time.Second, p+": 3 deliveries settled", func() bool {
			return h.metric("projector_applied_total", p)+h.metric("projector_stale_skipped_total", p)+
				h.metric("projector_duplicate_total", p) == 3
		})
	}
	if a, d := h.metric("projector_applied_total", "videos"), h.metric("projector_duplicate_total", "videos"); a != 1 || d != 2 {
		t.Fatalf("videos: applied=%v duplicate=%v, want 1 and 2", a, d)
	}
	// The search index may see a concurrent redelivery answered 409 before
	// the first delivery's inbox row lands: exactly one delivery is
	// recorded either way.
	if d := h.metric("projector_duplicate_total", "search"); d != 2 {
		t.Fatalf("search: duplicate=%v, want 2", d)
	}
	for _, c := range []string{catproj.VideosConsumer, catproj.SearchConsumer} {
		if n := h.inboxCount(c); n != 1 {
			t.Fatalf("inbox rows of %s = %d, want 1", c, n)
		}
	}
	if r, ok := h.row(id); !ok || r.Version != 1 || r.LastEventID != m.EventID {
		t.Fatalf("projection row = %+v (found %v)", r, ok)
	}
	if src, v, found := h.doc(es, id); !found || v != 1 || src["event_id"] != m.EventID.String() {
		t.Fatalf("search document = v%d %v (found %v)", v, src, found)
	}
}

func TestOlderVersionIsStaleInPostgresAndSearch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	_, es := h.search(batchConfig(10), elastictest.Options{}, nil)
	id := uuid.New()
	h.publish(projectiontest.Event(t, id, 1, false), projectiontest.Event(t, id, 3, false))
	h.eventually(10*time.Second, "v3 applied", func() bool {
		r, ok := h.row(id)
		_, v, _ := h.doc(es, id)
		return ok && r.Version == 3 && v == 3
	})
	// v1 may land after v3 (then it is stale): wait until both deliveries
	// settled in each projection before counting v2's.
	for _, p := range []string{"videos", "search"} {
		h.eventually(10*time.Second, p+": v1 and v3 settled", func() bool {
			return h.metric("projector_applied_total", p)+h.metric("projector_stale_skipped_total", p)+
				h.metric("projector_duplicate_total", p) == 2
		})
	}
	stale := h.metric("projector_stale_skipped_total", "search")
	h.publish(projectiontest.Event(t, id, 2, false))
	h.eventually(10*time.Second, "v2 counted stale", func() bool {
		return h.metric("projector_stale_skipped_total", "videos") >= 1 && h.metric("projector_stale_skipped_total", "search") == stale+1
	})
	r, _ := h.row(id)
	if r.Version != 3 || r.Title != projectiontest.Video(id, 3).Title {
		t.Fatalf("projection = v%d %q, want v3", r.Version, r.Title)
	}
	if src, v, _ := h.doc(es, id); v != 3 || src["title"] != projectiontest.Video(id, 3).Title {
		t.Fatalf("search document = v%d %v, want v3", v, src)
	}
}

func TestDeleteIsNotResurrectedByStaleUpdate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.videos(batchConfig(10))
	const gcDeletes = 50 * time.Millisecond
	_, es := h.search(batchConfig(10), elastictest.Options{GCDeletes: gcDeletes}, nil)
	id := uuid.New()
	h.publish(projectiontest.Event(t, id, 1, false))
	h.eventually(10*time.Second, "v1 applied", func() bool {
		_, ok := h.row(id)
		_, _, found := h.doc(es, id)
		return ok && found
	})
	h.publish(projectiontest.Event(t, id, 4, true))
	h.eventually(10*time.Second, "v4 tombstone", func() bool {
		r, _ := h.row(id)
		_, v, _ := h.doc(es, id)
		return r.Version == 4 && v == 4
	})
	time.Sleep(3 * gcDeletes) // Elasticsearch would have forgotten a delete's version by now
	h.publish(projectiontest.Event(t, id, 3, false))
	h.eventually(10*time.Second, "v3 counted stale", func() bool {
		return h.metric("projector_stale_skipped_total", "videos") == 1 && h.metric("projector_stale_skipped_total", "search") == 1
	})
	r, _ := h.row(id)
	if r.Version != 4 || !r.DeletedAt.Valid {
		t.Fatalf("projection = v%d deleted_at=%v, want the v4 tombstone", r.Version, r.DeletedAt)
	}
	if src, v, _ := h.doc(es, id); v != 4 || src["deleted"] != true || src["deleted_at"] == nil {
		t.Fatalf("search document = v%d %v, want the v4 tombstone", v, src)
	}
}

func TestBadInputIsDeadLetteredAndProjectorKeepsGoing(t *testing.T) {
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
		if m.Attributes[contract.AttrErrorReason] != want[id] {
			t.Errorf("dead letter of %s: error_reason %q, want %q (error: %s)", id, m.Attributes[contract.AttrErrorReason], want[id], m.Attributes[contract.AttrError])
		}
		if m.Attributes[contract.AttrProjection] != "videos" || m.Attributes[contract.AttrOriginalMessageID] == "" ||
			m.Attributes[contract.AttrError] == "" || m.Attributes[contract.AttrDeliveryAttempt] == "" {
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

// The production subscriptions are ordered by aggregate id; with
// exactly-once delivery the receiver acks with AckWithResult.
func TestOrderedExactlyOnceSubscription(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.subOpts = &pb.Subscription{EnableMessageOrdering: true, EnableExactlyOnceDelivery: true}
	h.videos(batchConfig(20))
	videos := make([]uuid.UUID, 10)
	var msgs []projectiontest.Msg
	for i := range videos {
		videos[i] = uuid.New()
		for v := int64(1); v <= 4; v++ {
			msgs = append(msgs, projectiontest.Event(t, videos[i], v, v == 4 && i%2 == 0))
		}
	}
	projectiontest.PublishOrdered(t, h.ps.Client, eventsTopic, msgs...)
	h.eventually(20*time.Second, "every event applied", func() bool { return h.inboxCount(catproj.VideosConsumer) == 40 })
	// In order per aggregate: nothing was ever stale.
	if n := h.metric("projector_stale_skipped_total", "videos"); n != 0 {
		t.Fatalf("stale_skipped_total = %v on an ordered subscription", n)
	}
	if n := h.metric("projector_ack_failed_total", "videos"); n != 0 {
		t.Fatalf("ack_failed_total = %v", n)
	}
	for i, id := range videos {
		if r, ok := h.row(id); !ok || r.Version != 4 || r.DeletedAt.Valid != (i%2 == 0) {
			t.Fatalf("video %d: v%d deleted=%v", i, r.Version, r.DeletedAt.Valid)
		}
	}
	// Acked for good: nothing is redelivered.
	time.Sleep(500 * time.Millisecond)
	if n := h.metric("projector_duplicate_total", "videos"); n != 0 {
		t.Fatalf("duplicate_total = %v: acks were not honoured", n)
	}
}
