package envelope_test

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/envelope"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projection"
)

// A service declares its events once, with their aggregate type and
// topic (here with well-known messages; a service uses its own, e.g.
// *ordersv1.OrderPaid), hands Encode to the outbox writer and registers
// typed handlers for its projection.
func Example() {
	codec := envelope.Must(envelope.Aggregate("notes.note", "notes.note.events",
		envelope.Type[*wrapperspb.StringValue]("notes.note.written"),
		envelope.Type[*emptypb.Empty]("notes.note.deleted"),
	))
	fmt.Println(codec.Types(), codec.AggregateType(), codec.Topic())

	// Write side: outbox.Config{Encoder: codec.Encode, ...}.
	var _ outbox.Encoder = codec.Encode
	meta := outbox.Metadata{
		EventID: uuid.Must(uuid.NewV7()), EventType: "notes.note.written", AggregateType: "notes.note",
		AggregateID: "n-1", AggregateVersion: 1, SchemaVersion: 1, OccurredAt: time.Now(),
	}
	body, err := codec.Encode(meta, wrapperspb.String("hello"))
	if err != nil {
		panic(err)
	}

	// Read side: one call per event type, the payload typed.
	reg := projection.NewRegistry[projection.TxHandler]()
	err = envelope.Handle(reg, codec, func(_ context.Context, _ pgx.Tx, ev *projection.Event, p *wrapperspb.StringValue) (projection.Outcome, error) {
		fmt.Printf("%s v%d: %s\n", ev.AggregateID, ev.AggregateVersion, p.GetValue())
		return projection.Applied, nil
	})
	if err != nil {
		panic(err)
	}

	// What the projector does with a received message.
	ev := &projection.Event{ID: meta.EventID, Type: meta.EventType, AggregateID: "n-1", AggregateVersion: 1, SchemaVersion: 1, Body: body}
	route, err := reg.Resolve(ev)
	if err != nil {
		panic(err)
	}
	out, err := route.Handler.HandleTx(context.Background(), nil, ev)
	fmt.Println(out, err)
	// Output:
	// [notes.note.deleted notes.note.written] notes.note notes.note.events
	// n-1 v1: hello
	// applied <nil>
}

// A write builds the outbox event of its change from the codec: the event
// type and the schema version come from the payload's declaration, the
// aggregate type and the topic from its Aggregate.
func ExampleCodec_Event() {
	codec := envelope.Must(envelope.Aggregate("notes.note", "notes.note.events",
		envelope.Type[*wrapperspb.StringValue]("notes.note.written", 1, 2),
	))
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev, err := codec.Event("n-1", 3, wrapperspb.String("hello"), at)
	fmt.Println(ev.EventType, ev.SchemaVersion, ev.AggregateType, ev.AggregateID, ev.AggregateVersion, ev.Topic, ev.OccurredAt.Format(time.RFC3339), err)
	_, err = codec.Event("n-1", 4, &emptypb.Empty{}, at)
	fmt.Println(err)
	// Output:
	// notes.note.written 2 notes.note n-1 3 notes.note.events 2026-01-02T03:04:05Z <nil>
	// envelope: *emptypb.Empty is not a declared event payload
}
