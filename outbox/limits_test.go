package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestInsertTxRefusesWhatPubSubRefuses: an event whose message Cloud
// Pub/Sub would refuse (INVALID_ARGUMENT) is refused at write time, naming
// the field and the limit, and writes nothing.
func TestInsertTxRefusesWhatPubSubRefuses(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	many := map[string]string{}
	for i := range 95 { // + 7 identity attributes + traceparent > 100
		many[fmt.Sprintf("h%d", i)] = "v"
	}
	cases := []refusal{
		{"ordering key", "ordering key is 1025 bytes, limit 1024", func(e *outbox.Event) { e.OrderingKey = strings.Repeat("k", 1025) }},
		{"aggregate id", "is 1025 bytes, limit 1024", func(e *outbox.Event) { e.AggregateID = strings.Repeat("a", 1025) }},
		{"header value", `attribute "x-big" value is 1025 bytes, limit 1024`, func(e *outbox.Event) { e.Headers = map[string]string{"x-big": strings.Repeat("v", 1025)} }},
		{"header key", "key is 257 bytes, limit 256", func(e *outbox.Event) { e.Headers = map[string]string{strings.Repeat("k", 257): "v"} }},
		{"attribute count", "attributes, limit 100", func(e *outbox.Event) { e.Headers = many }},
		{"goog prefix", `attribute "googfoo": keys starting with "goog" are reserved`, func(e *outbox.Event) { e.Headers = map[string]string{"googfoo": "v"} }},
		{"utf-8 value", `attribute "x-bin" value is not valid UTF-8`, func(e *outbox.Event) { e.Headers = map[string]string{"x-bin": "\xff\xfe"} }},
		{"utf-8 key", "is not valid UTF-8", func(e *outbox.Event) { e.Headers = map[string]string{"\xff": "v"} }},
		{"utf-8 ordering key", "ordering key is not valid UTF-8", func(e *outbox.Event) { e.OrderingKey = "\xff" }},
	}
	checkRefusals(t, db, w, cases)
}

// refusal is a change to a valid event that InsertTx must refuse with
// ErrInvalidEvent mentioning want.
type refusal struct {
	name, want string
	mutate     func(*outbox.Event)
}

// checkRefusals writes each refused event in its own transaction and
// checks the error and that no row was written.
func checkRefusals(t *testing.T, db *relaytest.DB, w *outbox.Writer, cases []refusal) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cases {
		err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
			e := created(uuid.NewString(), 1)
			c.mutate(&e)
			_, err := w.InsertTx(ctx, tx, e)
			return err
		})
		if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: InsertTx: %v, want ErrInvalidEvent mentioning %q", c.name, err, c.want)
		}
	}
	if n := count(t, db); n != 0 {
		t.Errorf("%d rows written by refused events, want 0", n)
	}
}

// TestInsertTxRefusesMessagesOverPubSubsSize: without MaxPayloadBytes the
// writer still refuses a message over Pub/Sub's 10 MB.
func TestInsertTxRefusesMessagesOverPubSubsSize(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	w := newWriter(t, outbox.Config{})
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		_, err := w.InsertTx(ctx, tx, withPadding(uuid.NewString(), 1, 10_000_000))
		return err
	})
	if !errors.Is(err, outbox.ErrInvalidEvent) || !strings.Contains(err.Error(), "limit 10000000") {
		t.Errorf("InsertTx of an 10 MB payload: %v, want ErrInvalidEvent naming the limit 10000000", err)
	}
}
