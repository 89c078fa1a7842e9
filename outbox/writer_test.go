package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

func newWriter(t testing.TB, cfg outbox.Config) *outbox.Writer {
	t.Helper()
	if cfg.Encoder == nil {
		cfg.Encoder = encode
	}
	if cfg.DefaultTopic == "" && cfg.Topics == nil {
		cfg.Topics = map[string]string{testevent.AggregateType: testevent.Topic}
	}
	w, err := outbox.NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// encode is testevent.Encode refusing an event type it does not know, as
// a service's encoder refuses a payload that does not match its type.
func encode(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
	switch meta.EventType {
	case testevent.TypeCreated, testevent.TypeUpdated, testevent.TypeDeleted:
		return testevent.Encode(meta, payload)
	}
	return nil, fmt.Errorf("event type %q does not match an item event", meta.EventType)
}

// created returns a valid item event for aggregate id at version (of
// type created, whatever the version).
func created(id string, version int64) outbox.Event {
	return withPadding(id, version, 0)
}

// withPadding is created with padding bytes in the payload.
func withPadding(id string, version int64, padding int) outbox.Event {
	e := testevent.Item(id, version, padding)
	e.EventType = testevent.TypeCreated
	return e
}

// decode reads back what encode wrote.
func decode(t *testing.T, body []byte) projection.Envelope {
	t.Helper()
	env, err := testevent.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func count(t *testing.T, db *relaytest.DB) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox_events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestInsertTxIsVisibleOnlyOnCommit(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()

	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.InsertTx(ctx, tx, created(uuid.NewString(), 1), created(uuid.NewString(), 1), created(uuid.NewString(), 1)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows visible before commit, want 0", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows after rollback, want 0", n)
	}

	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, created(uuid.NewString(), 1), created(uuid.NewString(), 1))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 2 {
		t.Errorf("%d rows after commit, want 2", n)
	}
}

func TestInsertTxFailureMidBatchLeavesNothing(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()
	id := uuid.NewString()

	// The second event (same version) violates the one-event-per-version
	// rule; the caller rolls back.
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, created(id, 1), created(id, 1))
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "outbox_events_aggregate_version_key") || !strings.Contains(err.Error(), id+", 1) already exists") {
		t.Errorf("duplicate version: %v, want a unique violation naming the key", err)
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows after a failed batch, want 0", n)
	}
}

// TestInsertTxWritesSeveralEventsInInputOrder writes the interleaved
// versions of three aggregates (and a restatement) in one call: the rows
// get ids ascending by input position, so each aggregate's versions are in
// order for the publishers, and Written[i] describes input i.
func TestInsertTxWritesSeveralEventsInInputOrder(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{Notify: true})
	a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
	restated := created(c, 1)
	restated.Restatement = true
	in := []outbox.Event{created(a, 1), created(b, 1), created(a, 2), created(c, 1), created(b, 2), restated, created(a, 3), created(b, 3)}
	in[3].Headers = map[string]string{"x-tenant": "t1"}
	stored := insertAndRead(t, db, w, in)
	if stored[3].Headers["x-tenant"] != "t1" || len(stored[2].Headers) != 0 {
		t.Errorf("headers: row 3 %v, row 2 %v", stored[3].Headers, stored[2].Headers)
	}
}

// TestInsertTxSplitsLargeCallsInOrder: a call larger than one statement's
// byte budget is written in several statements (one of them a single
// oversize row), still in input order.
func TestInsertTxSplitsLargeCallsInOrder(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	outbox.SetStatementBytes(w, 1000)
	id := uuid.NewString()
	var in []outbox.Event
	for v, padding := range []int{500, 200, 200, 1200, 0, 0, 0, 300} {
		in = append(in, withPadding(id, int64(v+1), padding))
	}
	insertAndRead(t, db, w, in)
}

// storedRow is an outbox_events row as insertAndRead reads it back.
type storedRow struct {
	ID        int64
	EventID   uuid.UUID
	AggID     string
	Version   int64
	Origin    string
	Headers   map[string]string
	Payload   []byte
	CreatedAt time.Time
}

// insertAndRead commits in with one InsertTx call into an empty outbox and
// checks that the rows, read back by id, are the events in input order,
// each matching its Written entry.
func insertAndRead(t *testing.T, db *relaytest.DB, w *outbox.Writer, in []outbox.Event) []storedRow {
	t.Helper()
	ctx := context.Background()
	var written []outbox.Written
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		written, err = w.InsertTx(ctx, tx, in...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, event_id, aggregate_id, aggregate_version, origin, headers, payload, created_at
		FROM outbox_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowToStructByPos[storedRow])
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(in) || len(written) != len(in) {
		t.Fatalf("%d rows stored and %d Written for %d events", len(stored), len(written), len(in))
	}
	for i, r := range stored { // by id: must be the input order
		wr := written[i]
		wantOrigin := "write"
		if in[i].Restatement {
			wantOrigin = "rebuild"
		}
		if r.ID != wr.ID || r.EventID != wr.EventID || !r.CreatedAt.Equal(wr.CreatedAt) || !maps.Equal(r.Headers, wr.Headers) ||
			r.AggID != in[i].AggregateID || r.Version != in[i].AggregateVersion || r.Origin != wantOrigin ||
			wr.AggregateID != in[i].AggregateID || wr.AggregateVersion != in[i].AggregateVersion {
			t.Errorf("row %d by id: id %d %s %s v%d %s; Written %d: id %d %s %s v%d; input %s v%d", i, r.ID, r.EventID, r.AggID, r.Version, r.Origin,
				i, wr.ID, wr.EventID, wr.AggregateID, wr.AggregateVersion, in[i].AggregateID, in[i].AggregateVersion)
		}
		ev := decode(t, r.Payload)
		if ev.EventID != wr.EventID.String() || !proto.Equal(ev.Payload.(proto.Message), in[i].Payload) {
			t.Errorf("row %d: envelope %v, want event %s with payload %v", i, ev, wr.EventID, in[i].Payload)
		}
		if i > 0 && wr.ID <= written[i-1].ID {
			t.Errorf("Written %d has id %d, not above %d of the event before it", i, wr.ID, written[i-1].ID)
		}
		if !wr.CreatedAt.Equal(written[0].CreatedAt) {
			t.Errorf("Written %d created at %v, want the transaction's %v", i, wr.CreatedAt, written[0].CreatedAt)
		}
	}
	return stored
}

// TestInsertTxValidatesEveryEventFirst: an invalid event among valid ones
// fails the call before anything is written, so even a caller that commits
// anyway stores none of them; the error names the event's index and field.
func TestInsertTxValidatesEveryEventFirst(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()
	bad := created(uuid.NewString(), 1)
	bad.EventType = ""
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below; a no-op then
	_, err = w.InsertTx(ctx, tx, created(uuid.NewString(), 1), created(uuid.NewString(), 1), bad, created(uuid.NewString(), 1))
	if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), "outbox event 2:") || !strings.Contains(err.Error(), "EventType is empty") {
		t.Errorf("InsertTx: %v, want ErrInvalidEvent naming event 2 and EventType", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows committed after a call with an invalid event, want 0", n)
	}
}

func TestInsertTxRefusesInvalidEvents(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{MaxPayloadBytes: 200})
	ctx := context.Background()
	id := uuid.NewString()
	cases := map[string]func(*outbox.Event){
		"AggregateType":          func(e *outbox.Event) { e.AggregateType = "" },
		"AggregateID":            func(e *outbox.Event) { e.AggregateID = "" },
		"AggregateVersion":       func(e *outbox.Event) { e.AggregateVersion = 0 },
		"EventType":              func(e *outbox.Event) { e.EventType = "" },
		"Payload":                func(e *outbox.Event) { e.Payload = nil },
		"does not match":         func(e *outbox.Event) { e.EventType = "test.item.renamed" },
		`Topic: topic id "!bad"`: func(e *outbox.Event) { e.Topic = "!bad" },
		"routes no topic for aggregate type \"other.thing\"": func(e *outbox.Event) { e.AggregateType = "other.thing" },
		"bytes, limit 200":      func(e *outbox.Event) { e.Payload = withPadding(id, 1, 300).Payload },
		"SchemaVersion must be": func(e *outbox.Event) { e.SchemaVersion = -1 },
	}
	for want, mutate := range cases {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			e := created(id, 1)
			mutate(&e)
			_, err := w.InsertTx(ctx, tx, e)
			return err
		})
		if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrInvalidEvent mentioning %q", want, err, want)
		}
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows written by invalid events", n)
	}
}

func TestInsertTxFillsMetadataAndRow(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	var encoded []outbox.Metadata
	w := newWriter(t, outbox.Config{
		Encoder: func(meta outbox.Metadata, payload proto.Message) ([]byte, error) {
			encoded = append(encoded, meta)
			return encode(meta, payload)
		},
		Producer:     outbox.Producer{Service: "svc", Instance: "i-1", Version: "v9"},
		Topics:       map[string]string{testevent.AggregateType: "items-topic"},
		DefaultTopic: "fallback-topic",
	})
	ctx := context.Background()
	id := uuid.NewString()
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))

	routed := created(id, 1)
	routed.OccurredAt = at
	routed.Headers = map[string]string{"x-tenant": "t1"}
	overridden := created(id, 2)
	overridden.EventType = testevent.TypeUpdated
	overridden.Topic, overridden.OrderingKey, overridden.SchemaVersion = "special-topic", "custom-key", 1
	overridden.EventID = uuid.MustParse("01890000-0000-7000-8000-000000000042")

	var written []outbox.Written
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		written, err = w.InsertTx(ctx, tx, routed, overridden)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := written[0], written[1]
	if a.EventID.Version() != 7 || a.OrderingKey != id || a.Topic != "items-topic" || a.SchemaVersion != 1 ||
		!a.OccurredAt.Equal(at.Truncate(time.Microsecond)) || a.OccurredAt.Location() != time.UTC || a.Producer.Instance != "i-1" {
		t.Errorf("defaults not filled: %+v", a.Metadata)
	}
	if b.EventID != overridden.EventID || b.Topic != "special-topic" || b.OrderingKey != "custom-key" || b.ID <= a.ID {
		t.Errorf("overrides not kept: %+v", b)
	}

	var (
		status, topic, key string
		attempts           int
		headers            map[string]string
		payload            []byte
		occurred           time.Time
	)
	err = db.Pool.QueryRow(ctx, `SELECT status, attempts, topic, ordering_key, headers, payload, occurred_at
		FROM outbox_events WHERE event_id = $1`, a.EventID).Scan(&status, &attempts, &topic, &key, &headers, &payload, &occurred)
	if err != nil {
		t.Fatal(err)
	}
	if status != "pending" || attempts != 0 || topic != "items-topic" || key != id || headers["x-tenant"] != "t1" || !occurred.Equal(a.OccurredAt) {
		t.Errorf("row: %s %d %s %s %v %v", status, attempts, topic, key, headers, occurred)
	}
	ev := decode(t, payload)
	if ev.EventID != a.EventID.String() || !ev.OccurredAt.Equal(a.OccurredAt) || !proto.Equal(ev.Payload.(proto.Message), routed.Payload) {
		t.Errorf("envelope %+v does not match the metadata %+v", ev, a.Metadata)
	}
	if len(encoded) != 2 || encoded[0].Producer != (outbox.Producer{Service: "svc", Instance: "i-1", Version: "v9"}) || encoded[0].EventID != a.EventID {
		t.Errorf("the encoder got %+v, want the metadata of both events with the producer", encoded)
	}
}

func TestInsertTxCarriesTraceContext(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
	}))
	var written []outbox.Written
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var err error
		written, err = w.InsertTx(ctx, tx, created(uuid.NewString(), 1)) // single-row INSERT
		if err != nil {
			return err
		}
		two, err := w.InsertTx(ctx, tx, created(uuid.NewString(), 1), created(uuid.NewString(), 1)) // one statement
		written = append(written, two...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	const want = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, wr := range written {
		var raw []byte
		if err := db.Pool.QueryRow(ctx, "SELECT headers FROM outbox_events WHERE event_id = $1", wr.EventID).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var headers map[string]string
		if err := json.Unmarshal(raw, &headers); err != nil {
			t.Fatal(err)
		}
		if wr.Headers["traceparent"] != want || headers["traceparent"] != want {
			t.Errorf("traceparent of %s: metadata %q, row %q, want %q", wr.EventID, wr.Headers["traceparent"], headers["traceparent"], want)
		}
	}
}

func TestRestatementIsExemptFromOneEventPerVersion(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()
	id := uuid.NewString()
	restated := created(id, 1)
	restated.Restatement = true
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, created(id, 1), restated, restated)
		return err
	})
	if err != nil {
		t.Fatalf("restatements at an existing version: %v", err)
	}
	var origins []string
	rows, _ := db.Pool.Query(ctx, "SELECT origin FROM outbox_events WHERE aggregate_id = $1 ORDER BY id", id)
	origins, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(origins, ",") != "write,rebuild,rebuild" {
		t.Errorf("origins %v, want write,rebuild,rebuild", origins)
	}
}

func TestNotifyWakesListenersOnCommitOnly(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+outbox.NotifyChannelFor(db.Schema)); err != nil {
		t.Fatal(err)
	}
	wait := func(d time.Duration) error {
		wctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		_, err := conn.WaitForNotification(wctx)
		return err
	}

	quiet := newWriter(t, outbox.Config{})
	if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := quiet.InsertTx(ctx, tx, created(uuid.NewString(), 1))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := wait(200 * time.Millisecond); err == nil {
		t.Error("notification without Notify")
	}

	loud := newWriter(t, outbox.Config{Notify: true})
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loud.InsertTx(ctx, tx, created(uuid.NewString(), 1)); err != nil {
		t.Fatal(err)
	}
	if err := wait(200 * time.Millisecond); err == nil {
		t.Error("notification before commit")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait(5 * time.Second); err != nil {
		t.Errorf("no notification after commit: %v", err)
	}
}

func TestNewWriterValidatesConfig(t *testing.T) {
	enc := outbox.Encoder(encode)
	cases := map[string]outbox.Config{
		"Encoder is required":               {DefaultTopic: "topic-a"},
		"DefaultTopic: topic id \"x\"":      {Encoder: enc, DefaultTopic: "x"},
		`Topics["a"]: topic id "no spaces"`: {Encoder: enc, Topics: map[string]string{"a": "no spaces"}},
		"MaxPayloadBytes":                   {Encoder: enc, DefaultTopic: "topic-a", MaxPayloadBytes: -1},
		"Config.NotifyChannel":              {Encoder: enc, DefaultTopic: "topic-a", NotifyChannel: strings.Repeat("c", 64)},
	}
	for want, cfg := range cases {
		if _, err := outbox.NewWriter(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NewWriter: %v, want an error mentioning %q", err, want)
		}
	}
	if _, err := outbox.NewWriter(outbox.Config{Encoder: enc, DefaultTopic: "topic-a"}); err != nil {
		t.Errorf("valid config: %v", err)
	}
	if _, err := outbox.NewWriter(outbox.Config{Encoder: enc}); err != nil {
		t.Errorf("config without routing (events carry their topic): %v", err)
	}
}
