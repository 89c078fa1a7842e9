package projectiontest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/contract"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
)

// Msg is one event as it travels on Pub/Sub.
type Msg struct {
	EventID    uuid.UUID
	Data       []byte
	Attributes map[string]string
	// OrderingKey is the aggregate id.
	OrderingKey string
}

// Video returns the state of video id at version: a title naming the
// version, published, media ready.
func Video(id uuid.UUID, version int64) *catalogv1.Video {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &catalogv1.Video{
		Id:             id.String(),
		UploaderId:     uuid.NewSHA1(uuid.NameSpaceOID, id[:]).String(),
		Title:          "video " + id.String()[:8] + " v" + strconv.FormatInt(version, 10),
		Description:    "state at version " + strconv.FormatInt(version, 10),
		DurationMicros: 1_000_000 * version,
		Status:         catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED,
		MediaStatus:    catalogv1.MediaStatus_MEDIA_STATUS_READY,
		AnalysisStatus: catalogv1.AnalysisStatus_ANALYSIS_STATUS_PENDING,
		Version:        version,
		CreatedAt:      timestamppb.New(created),
		UpdatedAt:      timestamppb.New(created.Add(time.Duration(version) * time.Minute)),
	}
}

// Event builds the message of video id at version: created for version 1,
// updated otherwise, deleted (a tombstone) when deleted is true.
func Event(t testing.TB, id uuid.UUID, version int64, deleted bool) Msg {
	t.Helper()
	v := Video(id, version)
	var payload proto.Message
	typ := events.TypeVideoUpdated
	switch {
	case deleted:
		v.DeletedAt = v.UpdatedAt
		payload, typ = &catalogv1.VideoDeleted{Video: v, Reason: "test"}, events.TypeVideoDeleted
	case version == 1:
		payload, typ = &catalogv1.VideoCreated{Video: v}, events.TypeVideoCreated
	default:
		payload = &catalogv1.VideoUpdated{Video: v}
	}
	eid, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	meta := outbox.Metadata{
		EventID: eid, EventType: typ, AggregateType: events.AggregateType, AggregateID: id.String(),
		AggregateVersion: version, SchemaVersion: events.SchemaVersion,
		OccurredAt:  time.Now().UTC().Truncate(time.Microsecond),
		OrderingKey: id.String(), Topic: events.Topic,
		Producer: outbox.Producer{Service: "catalog", Instance: "test"},
	}
	body, err := events.Codec.Encode(meta, payload)
	if err != nil {
		t.Fatal(err)
	}
	return Msg{EventID: eid, Data: body, Attributes: Attributes(meta), OrderingKey: id.String()}
}

// Attributes are the message attributes the publisher sets for meta.
func Attributes(meta outbox.Metadata) map[string]string {
	return map[string]string{
		contract.AttrEventID:       meta.EventID.String(),
		contract.AttrEventType:     meta.EventType,
		contract.AttrAggregateType: meta.AggregateType,
		contract.AttrAggregateID:   meta.AggregateID,
		contract.AttrVersion:       strconv.FormatInt(meta.AggregateVersion, 10),
		contract.AttrSchemaVersion: strconv.Itoa(int(meta.SchemaVersion)),
		contract.AttrOccurredAt:    meta.OccurredAt.Format(time.RFC3339Nano),
	}
}

// Publish publishes msgs to topic and waits until each is accepted.
func Publish(t testing.TB, client *pubsub.Client, topic string, msgs ...Msg) {
	t.Helper()
	publish(t, client, topic, false, msgs)
}

// PublishOrdered is Publish with the aggregate id as ordering key, as the
// publisher daemon does.
func PublishOrdered(t testing.TB, client *pubsub.Client, topic string, msgs ...Msg) {
	t.Helper()
	publish(t, client, topic, true, msgs)
}

func publish(t testing.TB, client *pubsub.Client, topic string, ordered bool, msgs []Msg) {
	t.Helper()
	pub := client.Publisher(topic)
	pub.EnableMessageOrdering = ordered
	defer pub.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results := make([]*pubsub.PublishResult, len(msgs))
	for i, m := range msgs {
		pm := &pubsub.Message{Data: m.Data, Attributes: m.Attributes}
		if ordered {
			pm.OrderingKey = m.OrderingKey
		}
		results[i] = pub.Publish(ctx, pm)
	}
	for i, r := range results {
		if _, err := r.Get(ctx); err != nil {
			t.Fatalf("publishing message %d: %v", i, err)
		}
	}
}
