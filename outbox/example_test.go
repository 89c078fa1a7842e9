package outbox_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/protobuf/proto"

	catalogv1 "github.com/eventrelay/eventrelay/api/catalog/v1"
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
	cfg.ConnConfig.RuntimeParams["search_path"] = "catalog" // the schema of the eventrelay tables
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	w, err := outbox.NewWriter(outbox.Config{
		// A real service wraps the payload in its envelope; the catalog
		// uses internal/catalog/events.Encode.
		Encoder:      func(_ outbox.Metadata, payload proto.Message) ([]byte, error) { return proto.Marshal(payload) },
		Producer:     outbox.Producer{Service: "catalog"},
		DefaultTopic: "catalog.video.events",
		Notify:       true, // wake publishers on commit
	})
	if err != nil {
		log.Fatal(err)
	}

	const id = "0196f0a0-0000-7000-8000-000000000001"
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "UPDATE videos SET title = $2, version = version + 1 WHERE id = $1", id, "New title"); err != nil {
			return err
		}
		written, err := w.InsertTx(ctx, tx, outbox.Event{
			AggregateType:    "catalog.video",
			AggregateID:      id,
			AggregateVersion: 2,
			EventType:        "catalog.video.updated",
			Payload:          &catalogv1.VideoUpdated{Video: &catalogv1.Video{Id: id, Title: "New title", Version: 2}},
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
	// Output: outbox: Config.DefaultTopic "bad topic" is not a valid Pub/Sub topic id
}
