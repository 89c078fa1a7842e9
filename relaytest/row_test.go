package relaytest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

var notes = envelope.Must(
	envelope.Type[*wrapperspb.StringValue]("notes.note.written"),
	envelope.Type[*emptypb.Empty]("notes.note.deleted"),
)

func writer(t *testing.T) *outbox.Writer {
	w, err := outbox.NewWriter(outbox.Config{Encoder: notes.Encode, DefaultTopic: "notes", Producer: outbox.Producer{Service: "notes"}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRequireEmitted(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes"})
	ctx := context.Background()
	w := writer(t)
	// A committed event is not the next transaction's.
	if err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, outbox.Event{AggregateType: "notes.note", AggregateID: "n-1", AggregateVersion: 1,
			EventType: "notes.note.written", Payload: wrapperspb.String("first")})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := w.InsertTx(ctx, tx, outbox.Event{AggregateType: "notes.note", AggregateID: "n-1", AggregateVersion: 2,
		EventType: "notes.note.written", Payload: wrapperspb.String("second")}); err != nil {
		t.Fatal(err)
	}
	// One written under a savepoint counts as the transaction's.
	if err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		_, err := w.InsertTx(ctx, sp, outbox.Event{AggregateType: "notes.note", AggregateID: "n-1", AggregateVersion: 3,
			EventType: "notes.note.deleted", Payload: &emptypb.Empty{}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rows := relaytest.RequireEmittedTx(t, tx, notes.Decode,
		relaytest.Emitted{EventType: "notes.note.written", AggregateID: "n-1", AggregateVersion: 2, Payload: wrapperspb.String("second")},
		relaytest.Emitted{EventType: "notes.note.deleted", AggregateVersion: 3},
	)
	m := rows[0].Message()
	if m.OrderingKey != "n-1" || m.Attributes[contract.AttrVersion] != "2" || m.Attributes[contract.AttrEventType] != "notes.note.written" {
		t.Fatalf("message = %+v", m)
	}
	if ev, err := projection.ParseAttributes(m.Attributes); err != nil || ev.ID != rows[0].EventID {
		t.Fatalf("the message's attributes do not parse as the row's identity: %v %v", ev, err)
	}
	relaytest.RequireEmitted(t, db.Pool, notes.Decode, relaytest.Emitted{EventType: "notes.note.written", Payload: wrapperspb.String("first")})

	// A mismatch fails the test and names the event.
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		relaytest.RequireEmittedTx(ft, tx, notes.Decode, relaytest.Emitted{EventType: "notes.note.written", Payload: wrapperspb.String("other")})
	}()
	if !ft.failed {
		t.Fatal("a wrong payload and count passed")
	}
}

// fakeT records a Fatalf instead of stopping the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	f.TB.Logf("(expected) "+format, args...)
	panic("fatal")
}

func TestPubSubCreatesResourcesAndCountsRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pubsub.yaml")
	if err := os.WriteFile(path, []byte(`pubsub:
  project_id: notes-local
topics:
  - name: notes.events
subscriptions:
  - name: notes.read-model
    topic: notes.events
    ordered: true
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: path, RTT: time.Millisecond, ExpectRefusals: true})
	ps.Publish(t, "notes.events", &pubsub.Message{Data: []byte("x"), OrderingKey: "n-1"})
	got := ps.Receive(t, "notes.read-model", 1, 30*time.Second)
	if string(got[0].Data) != "x" || got[0].OrderingKey != "n-1" {
		t.Fatalf("received %+v", got[0])
	}
	// A message with neither data nor attributes: Cloud Pub/Sub refuses it.
	p := ps.Client.Publisher("notes.events")
	defer p.Stop()
	if _, err := p.Publish(context.Background(), &pubsub.Message{}).Get(context.Background()); err == nil {
		t.Fatal("an empty message was accepted")
	}
	if ps.Refused() != 1 {
		t.Fatalf("Refused = %d, want 1", ps.Refused())
	}
}
