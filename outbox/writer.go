package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// Event is one domain event to append. Only the aggregate fields, EventType
// and Payload are required.
type Event struct {
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	EventType        string
	// SchemaVersion of the payload for EventType (default 1).
	SchemaVersion int32
	// Payload is the domain message, e.g. a *ordersv1.OrderPaid. The
	// Writer's Encoder wraps it in the envelope.
	Payload proto.Message

	// Optional overrides.
	EventID     uuid.UUID // default: a new UUIDv7
	OccurredAt  time.Time // default: now
	OrderingKey string    // default: AggregateID
	// Topic routes the event, whatever the Writer's routing (envelope's
	// Codec.Event sets it from the event type's declaration); empty: the
	// Writer's Topics, then its DefaultTopic.
	Topic   string
	Headers map[string]string
	// Restatement marks an event that re-states the current state of an
	// aggregate (rebuild) rather than recording a change: it gets a new
	// event id at an existing version and is exempt from the one-event-per-
	// version rule.
	Restatement bool
}

// Metadata is an event's identity after the Writer filled the defaults; the
// Encoder puts it in the envelope.
type Metadata struct {
	EventID          uuid.UUID
	EventType        string
	AggregateType    string
	AggregateID      string
	AggregateVersion int64
	SchemaVersion    int32
	OccurredAt       time.Time
	OrderingKey      string
	Topic            string
	Producer         Producer
	// Headers include W3C trace context (traceparent, tracestate) taken from
	// the context passed to InsertTx.
	Headers map[string]string
}

// Producer identifies the emitting service in every envelope.
type Producer struct {
	Service  string
	Instance string
	Version  string
}

// Encoder serializes the envelope of one event (envelope.Codec.Encode gives
// one from the declaration of a service's event messages).
type Encoder func(meta Metadata, payload proto.Message) ([]byte, error)

// Written reports a stored event.
type Written struct {
	Metadata
	// ID is the outbox row id.
	ID int64
	// CreatedAt is the row's insert time (the transaction's now()).
	CreatedAt time.Time
}

// Config configures a Writer.
type Config struct {
	// Encoder is required.
	Encoder Encoder
	// Producer is copied into every envelope.
	Producer Producer
	// Topics routes aggregate types to topics; DefaultTopic is used for
	// aggregate types not listed. They route the events whose Topic is
	// empty: a writer whose events all carry their topic (envelope's
	// Codec.Event) needs neither, and InsertTx refuses an event that
	// neither the event nor the writer routes.
	Topics       map[string]string
	DefaultTopic string
	// Notify issues pg_notify in the transaction so an idle publisher wakes
	// on commit. NOTIFY takes a database-wide lock at commit, held until the
	// commit is flushed, which serializes notifying commits. So the
	// notification is sent only when a publisher asked for one: a publisher
	// with a fetch cooldown (relay.Options.FetchCooldown, the default) asks
	// when its last claim came back empty, and while busy it claims again
	// after its cooldown by itself. With no such publisher registered in
	// outbox_wakeups (older publishers, polling ones) every commit notifies.
	Notify bool
	// NotifyChannel overrides the channel Notify uses. Empty (the default):
	// NotifyChannelFor the schema the transaction works in (its
	// current_schema(), derived in SQL), which is the channel a relay on
	// that schema LISTENs on by default.
	NotifyChannel string
	// MaxPayloadBytes refuses larger envelopes at write time (0: no limit
	// but Pub/Sub's). Whatever it is, InsertTx refuses an event whose
	// message (envelope, attributes, ordering key) breaks one of Pub/Sub's
	// limits (contract.CheckMessage), 10 MB among them.
	MaxPayloadBytes int
}

// Writer appends events to the outbox. It is safe for concurrent use.
type Writer struct {
	cfg            Config
	statementBytes int
}

// ErrInvalidEvent is returned (wrapped) for events that cannot be written.
var ErrInvalidEvent = errors.New("invalid outbox event")

// NewWriter validates cfg.
func NewWriter(cfg Config) (*Writer, error) {
	if cfg.Encoder == nil {
		return nil, errors.New("outbox: Config.Encoder is required")
	}
	if cfg.DefaultTopic != "" {
		if err := contract.CheckTopicID(cfg.DefaultTopic); err != nil {
			return nil, fmt.Errorf("outbox: Config.DefaultTopic: %w", err)
		}
	}
	for at, t := range cfg.Topics {
		if err := contract.CheckTopicID(t); err != nil {
			return nil, fmt.Errorf("outbox: Config.Topics[%q]: %w", at, err)
		}
	}
	if cfg.NotifyChannel != "" {
		if err := CheckNotifyChannel(cfg.NotifyChannel); err != nil {
			return nil, fmt.Errorf("outbox: Config.NotifyChannel: %w", err)
		}
	}
	if cfg.MaxPayloadBytes < 0 {
		return nil, errors.New("outbox: Config.MaxPayloadBytes must be >= 0")
	}
	return &Writer{cfg: cfg, statementBytes: statementBytes}, nil
}

// InsertTx appends events in tx, in order: their outbox ids ascend in the
// order of events, which is the order publishers deliver the events of one
// ordering key in. Every event is validated and encoded before anything is
// written, so an invalid event writes nothing; several events are written
// in one statement (several for more than 16 MB of payloads). It returns
// the stored metadata, one entry per event.
// On error the caller must roll tx back.
func (w *Writer) InsertTx(ctx context.Context, tx pgx.Tx, events ...Event) ([]Written, error) {
	if len(events) == 0 {
		return nil, nil
	}
	out := make([]Written, len(events))
	rows := make(rows, len(events))
	for i := range events {
		meta, row, err := w.row(ctx, &events[i])
		if err != nil {
			return nil, fmt.Errorf("outbox event %d: %w", i, err)
		}
		out[i].Metadata, rows[i] = meta, row
	}
	for i := range rows { // the statements notify too (outbox_notify): no extra round trip
		rows[i].Notify, rows[i].NotifyChannel = w.cfg.Notify, w.cfg.NotifyChannel
	}
	if err := rows.insert(ctx, outboxdb.New(tx), out, w.statementBytes); err != nil {
		return nil, err
	}
	return out, nil
}

// row validates e, fills its defaults and encodes its envelope.
func (w *Writer) row(ctx context.Context, e *Event) (Metadata, outboxdb.InsertOutboxEventParams, error) {
	meta, err := w.metadata(ctx, e)
	if err != nil {
		return Metadata{}, outboxdb.InsertOutboxEventParams{}, err
	}
	body, err := w.cfg.Encoder(meta, e.Payload)
	if err != nil {
		return Metadata{}, outboxdb.InsertOutboxEventParams{}, fmt.Errorf("encoding envelope: %w: %w", ErrInvalidEvent, err)
	}
	if w.cfg.MaxPayloadBytes > 0 && len(body) > w.cfg.MaxPayloadBytes {
		return Metadata{}, outboxdb.InsertOutboxEventParams{}, fmt.Errorf("%w: envelope is %d bytes, limit %d", ErrInvalidEvent, len(body), w.cfg.MaxPayloadBytes)
	}
	if err := checkMessage(meta, body); err != nil {
		return Metadata{}, outboxdb.InsertOutboxEventParams{}, err
	}
	headers, err := json.Marshal(meta.Headers)
	if err != nil {
		return Metadata{}, outboxdb.InsertOutboxEventParams{}, fmt.Errorf("encoding headers: %w", err)
	}
	return meta, outboxdb.InsertOutboxEventParams{
		EventID:          meta.EventID,
		AggregateType:    meta.AggregateType,
		AggregateID:      meta.AggregateID,
		AggregateVersion: meta.AggregateVersion,
		EventType:        meta.EventType,
		SchemaVersion:    meta.SchemaVersion,
		OrderingKey:      meta.OrderingKey,
		Topic:            meta.Topic,
		Headers:          headers,
		Payload:          body,
		OccurredAt:       meta.OccurredAt,
		Origin:           origin(e.Restatement),
	}, nil
}

func origin(restatement bool) string {
	if restatement {
		return "rebuild"
	}
	return "write"
}

func (w *Writer) metadata(ctx context.Context, e *Event) (Metadata, error) {
	if err := checkFields(e); err != nil {
		return Metadata{}, err
	}
	switch {
	case e.AggregateVersion < 1:
		return Metadata{}, fmt.Errorf("%w: AggregateVersion must be >= 1, got %d", ErrInvalidEvent, e.AggregateVersion)
	case e.Payload == nil:
		return Metadata{}, fmt.Errorf("%w: Payload is nil", ErrInvalidEvent)
	case e.SchemaVersion < 0:
		return Metadata{}, fmt.Errorf("%w: SchemaVersion must be >= 1, got %d", ErrInvalidEvent, e.SchemaVersion)
	}
	m := Metadata{
		EventID:          e.EventID,
		EventType:        e.EventType,
		AggregateType:    e.AggregateType,
		AggregateID:      e.AggregateID,
		AggregateVersion: e.AggregateVersion,
		SchemaVersion:    e.SchemaVersion,
		OccurredAt:       e.OccurredAt,
		OrderingKey:      e.OrderingKey,
		Topic:            e.Topic,
		Producer:         w.cfg.Producer,
		Headers:          map[string]string{},
	}
	if m.EventID == uuid.Nil {
		id, err := uuid.NewV7()
		if err != nil {
			return Metadata{}, fmt.Errorf("generating event id: %w", err)
		}
		m.EventID = id
	}
	if m.SchemaVersion == 0 {
		m.SchemaVersion = 1
	}
	if m.OccurredAt.IsZero() {
		m.OccurredAt = time.Now()
	}
	m.OccurredAt = m.OccurredAt.UTC().Truncate(time.Microsecond) // Postgres precision
	if m.OrderingKey == "" {
		m.OrderingKey = e.AggregateID
	}
	if m.Topic == "" {
		m.Topic = w.cfg.Topics[e.AggregateType]
		if m.Topic == "" {
			m.Topic = w.cfg.DefaultTopic
		}
		if m.Topic == "" {
			return Metadata{}, fmt.Errorf("%w: the event has no Topic and the writer routes no topic for aggregate type %q (Config.Topics, Config.DefaultTopic)", ErrInvalidEvent, e.AggregateType)
		}
	} else if err := contract.CheckTopicID(m.Topic); err != nil {
		return Metadata{}, fmt.Errorf("%w: Topic: %w", ErrInvalidEvent, err)
	}
	for k, v := range e.Headers {
		m.Headers[k] = v
	}
	putTraceContext(ctx, m.Headers)
	return m, nil
}
