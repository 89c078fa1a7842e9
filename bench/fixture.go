package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventrelay/eventrelay/contract"
	catalogv1 "github.com/eventrelay/eventrelay/examples/catalog-demo/api/catalog/v1"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
)

// Fixture generates realistic catalog events: state-carrying envelopes of
// about 300 bytes (events.Codec.Encode), spread round-robin over a fixed set of
// aggregates whose versions grow by one per event.
type Fixture struct {
	aggregates []uuid.UUID
	uploader   uuid.UUID
	next       int // events generated so far
	epoch      time.Time
}

// NewFixture returns a generator over n aggregates.
func NewFixture(n int) *Fixture {
	f := &Fixture{aggregates: make([]uuid.UUID, n), uploader: uuid.Must(uuid.NewV7()), epoch: time.Now().UTC()}
	for i := range f.aggregates {
		f.aggregates[i] = uuid.Must(uuid.NewV7())
	}
	return f
}

// Event is one generated event: its metadata, payload and encoded
// envelope, and the index of its aggregate.
type Event struct {
	Meta    outbox.Metadata
	Video   *catalogv1.Video
	Payload proto.Message
	Body    []byte
	Agg     int
}

// Outbox is the event as a service hands it to outbox.Writer (same id,
// aggregate, version and payload; occurred now).
func (e Event) Outbox() outbox.Event {
	return outbox.Event{
		EventID: e.Meta.EventID, AggregateType: e.Meta.AggregateType, AggregateID: e.Meta.AggregateID,
		AggregateVersion: e.Meta.AggregateVersion, EventType: e.Meta.EventType, Payload: e.Payload,
		Headers: map[string]string{"traceparent": e.Meta.Headers["traceparent"]},
	}
}

// description keeps the envelope near the ~300 bytes of a typical event
// (ids, trace context and timestamps take most of it).
const description = "Bench."

// Next generates the next event.
func (f *Fixture) Next() (Event, error) {
	i := f.next
	f.next++
	agg := f.aggregates[i%len(f.aggregates)]
	version := int64(i/len(f.aggregates) + 1)
	at := time.Now().UTC().Truncate(time.Microsecond)
	v := &catalogv1.Video{
		Id:             agg.String(),
		UploaderId:     f.uploader.String(),
		Title:          "Benchmark video " + strconv.Itoa(i%len(f.aggregates)) + " take " + strconv.FormatInt(version, 10),
		Description:    description,
		DurationMicros: 90_000_000 + int64(i%1000),
		Status:         catalogv1.VideoStatus_VIDEO_STATUS_PUBLISHED,
		MediaStatus:    catalogv1.MediaStatus_MEDIA_STATUS_READY,
		AnalysisStatus: catalogv1.AnalysisStatus_ANALYSIS_STATUS_PROCESSING,
		Version:        version,
		CreatedAt:      timestamppb.New(f.epoch),
		UpdatedAt:      timestamppb.New(at),
	}
	meta := outbox.Metadata{
		EventID:          uuid.Must(uuid.NewV7()),
		AggregateType:    events.AggregateType,
		AggregateID:      agg.String(),
		AggregateVersion: version,
		SchemaVersion:    events.SchemaVersion,
		OccurredAt:       at,
		OrderingKey:      agg.String(),
		Topic:            events.Topic,
		Producer:         outbox.Producer{Service: "catalog", Instance: "relaybench", Version: "bench"},
		Headers:          map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
	}
	var payload proto.Message
	if version == 1 {
		meta.EventType = events.TypeVideoCreated
		payload = &catalogv1.VideoCreated{Video: v}
	} else {
		meta.EventType = events.TypeVideoUpdated
		payload = &catalogv1.VideoUpdated{Video: v, ChangedFields: &fieldmaskpb.FieldMask{Paths: []string{"title"}}}
	}
	body, err := events.Codec.Encode(meta, payload)
	if err != nil {
		return Event{}, fmt.Errorf("encoding fixture event: %w", err)
	}
	return Event{Meta: meta, Video: v, Payload: payload, Body: body, Agg: i % len(f.aggregates)}, nil
}

// Message is the Pub/Sub message the publisher makes of an event: the
// envelope as data, the identity repeated in attributes, the aggregate as
// ordering key.
func (e Event) Message() *pubsub.Message {
	return &pubsub.Message{
		Data:        e.Body,
		OrderingKey: e.Meta.OrderingKey,
		Attributes: map[string]string{
			contract.AttrEventID:       e.Meta.EventID.String(),
			contract.AttrEventType:     e.Meta.EventType,
			contract.AttrAggregateType: e.Meta.AggregateType,
			contract.AttrAggregateID:   e.Meta.AggregateID,
			contract.AttrVersion:       strconv.FormatInt(e.Meta.AggregateVersion, 10),
			contract.AttrSchemaVersion: strconv.Itoa(int(e.Meta.SchemaVersion)),
			contract.AttrOccurredAt:    e.Meta.OccurredAt.Format(time.RFC3339Nano),
			contract.AttrTraceparent:   e.Meta.Headers["traceparent"],
		},
	}
}

// Generate returns the next n events.
func (f *Fixture) Generate(n int) ([]Event, error) {
	out := make([]Event, 0, n)
	for range n {
		e, err := f.Next()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

var outboxColumns = []string{"event_id", "aggregate_type", "aggregate_id", "aggregate_version", "event_type",
	"schema_version", "ordering_key", "topic", "headers", "payload", "occurred_at"}

// Seed appends n pending outbox rows with COPY (seeding is preparation, not
// measured; the rows are what outbox.Writer would have written). Call
// analyze after large seeds.
func (f *Fixture) Seed(ctx context.Context, db *DB, n int) error {
	var genErr error
	left := n
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if left == 0 {
			return nil, nil
		}
		left--
		e, err := f.Next()
		if err != nil {
			genErr = err
			return nil, err
		}
		h, _ := json.Marshal(e.Meta.Headers)
		return []any{e.Meta.EventID, e.Meta.AggregateType, e.Meta.AggregateID, e.Meta.AggregateVersion,
			e.Meta.EventType, e.Meta.SchemaVersion, e.Meta.OrderingKey, e.Meta.Topic, string(h), e.Body,
			e.Meta.OccurredAt}, nil
	})
	got, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"outbox_events"}, outboxColumns, src)
	if genErr != nil {
		return genErr
	}
	if err != nil {
		return fmt.Errorf("seeding outbox: %w", err)
	}
	if int(got) != n {
		return fmt.Errorf("seeding outbox: copied %d rows, want %d", got, n)
	}
	return nil
}

// analyze refreshes the planner statistics of the outbox after a seed (as
// autovacuum would, eventually).
func analyze(ctx context.Context, db *DB) error {
	if _, err := db.Pool.Exec(ctx, "ANALYZE outbox_events"); err != nil {
		return fmt.Errorf("analyzing outbox: %w", err)
	}
	return nil
}

// messageSize reports the envelope and attribute bytes of a typical
// event, for the notes.
func messageSize() (body, attrs int) {
	e, err := NewFixture(1).Next()
	if err != nil {
		return 0, 0
	}
	m := e.Message()
	for k, v := range m.Attributes {
		attrs += len(k) + len(v)
	}
	return len(m.Data), attrs
}
