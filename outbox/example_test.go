package outbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventrelay/eventrelay/outbox"
)

// A service changes its own row and appends the event in the same
// transaction: both commit, or neither does. (Needs a migrated database, so
// it is compiled but not run; the tests in this package run the same calls.)
func ExampleWriter_InsertTx() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "orders" // the schema of the service's and eventrelay's tables
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	w, err := outbox.NewWriter(outbox.Config{
		// A real service wraps the payload in its envelope (the metadata
		// and the payload); this one sends the payload alone.
		Encoder:      func(_ outbox.Metadata, payload proto.Message) ([]byte, error) { return proto.Marshal(payload) },
		Producer:     outbox.Producer{Service: "orders"},
		DefaultTopic: "orders.events",
		Notify:       true, // wake publishers on commit
	})
	if err != nil {
		log.Fatal(err)
	}

	const id = "0196f0a0-0000-7000-8000-000000000001"
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE orders SET status = 'paid', version = version + 1 WHERE id = $1", id); err != nil {
			return err
		}
		paid, err := structpb.NewStruct(map[string]any{"id": id, "status": "paid"}) // the service's own message
		if err != nil {
			return err
		}
		written, err := w.InsertTx(ctx, tx, outbox.Event{
			AggregateType:    "order",
			AggregateID:      id,
			AggregateVersion: 2,
			EventType:        "orders.order.paid",
			Payload:          paid,
		})
		if err != nil {
			return err // BeginFunc rolls back: no row, no event
		}
		fmt.Println("appended", written[0].EventID, "to", written[0].Topic)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// NewWriter checks its configuration up front.
func ExampleNewWriter() {
	_, err := outbox.NewWriter(outbox.Config{
		Encoder:      func(_ outbox.Metadata, p proto.Message) ([]byte, error) { return proto.Marshal(p) },
		DefaultTopic: "bad topic",
	})
	fmt.Println(err)
	// Output: outbox: Config.DefaultTopic: topic id "bad topic" has ' ' at byte 3: only letters, digits and - _ . ~ + % are allowed
}
