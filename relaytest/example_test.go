package relaytest_test

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// ordersSet is an orders service's own goose set (usually an embed.FS of
// its migrations directory).
var ordersSet = migrations.Set{Name: "orders", VersionTable: "orders_goose_db_version", FS: fstest.MapFS{
	"00001_orders.sql": {Data: []byte("-- +goose Up\nCREATE TABLE orders (id uuid PRIMARY KEY, total bigint NOT NULL);\n-- +goose Down\nDROP TABLE orders;\n")},
}}

// newOrdersDB gives each test of the orders service a database with
// eventrelay's tables and its own, in schema orders.
func newOrdersDB(t testing.TB) *relaytest.DB {
	return relaytest.NewDB(t, relaytest.Options{
		Schema:     "orders",
		Migrations: []migrations.Set{migrations.Eventrelay, ordersSet},
	})
}

// An orders service's test writes its business row and its outbox row in
// one transaction on db.Pool (search_path: orders). Examples get no
// *testing.T, so this one is compiled, not run; TestNewDBTakesTheSchemaAndSets
// runs newOrdersDB.
func Example() {
	testOrderIsWritten := func(t *testing.T) {
		db := newOrdersDB(t)
		tx, err := db.Pool.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		// ... insert into orders and, through outbox.Writer.InsertTx, into outbox_events.
	}
	_ = testOrderIsWritten
}

// A service's test asserts what its write path appended to the outbox, in
// the transaction, with the payloads decoded by its envelope codec; and an
// end-to-end test talks to Pub/Sub through the strict double, with the
// resources of the service's configs/pubsub.yaml. Compiled, not run
// (TestRequireEmitted and TestPubSubCreatesResourcesAndCountsRefusals run
// the same calls).
func ExampleRequireEmittedTx() {
	testPlaceOrder := func(t *testing.T) {
		db := newOrdersDB(t)
		tx, err := db.Pool.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		// ... placeOrder(ctx, tx, ...) writes the order and its event.
		relaytest.RequireEmittedTx(t, tx, notes.Decode,
			relaytest.Emitted{EventType: "notes.note.written", AggregateID: "n-1", AggregateVersion: 1, Payload: wrapperspb.String("hello")})

		ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "../../configs/pubsub.yaml", RTT: 10 * time.Millisecond})
		_ = ps.Client // hand it to the relay and the projector under test
	}
	_ = testPlaceOrder
}

// An end-to-end test runs the service's app, as its main declares it for
// embedded.Main, against a test database and the strict double: its
// relay, projector and servers, stopped when the test ends. Compiled, not
// run (TestPipeline runs the same calls).
func ExampleStartPipeline() {
	var service embedded.Options // the service's main declares it: Name, Relay, Register, Writer, Servers
	testOrdersEndToEnd := func(t *testing.T) {
		db := newOrdersDB(t)
		ps := relaytest.NewPubSub(t, relaytest.PubSubOptions{Resources: "../../configs/pubsub.yaml", RTT: 2 * time.Millisecond})
		p := relaytest.StartPipeline(t, relaytest.PipelineOptions{DB: db, PubSub: ps, Service: service})
		_ = p.Endpoint(t, "grpc") // ... place orders through the service's API
		p.WaitStats(t, "order-summaries", "3 events applied", time.Minute, func(s projector.Stats) bool { return s.Applied == 3 })
		ps.Redeliver(t, relaytest.Rows(t, db.Pool)[0]) // absorbed: Stats(t, "order-summaries").Duplicate == 1
		_ = ps.DeadLetters("orders.order.events.dlq-summaries")
	}
	_ = testOrdersEndToEnd
}
