package relayfixture

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// Topic is the test events' topic.
const Topic = testevent.Topic

// Writer is an outbox writer of test events (NOTIFY on commit when
// notify).
func Writer(t testing.TB, notify bool) *outbox.Writer {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Encoder: testevent.Encode, DefaultTopic: testevent.Topic, Notify: notify,
		Producer: outbox.Producer{Service: "relay-test"}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// ID is the deterministic id of aggregate i.
func ID(i int) string { return testevent.ID(i) }

// Item is version v of item id; padding bytes make large payloads.
func Item(id string, v int64, padding int) outbox.Event { return testevent.Item(id, v, padding) }

// Insert writes evs in one transaction.
func Insert(t testing.TB, pool *pgxpool.Pool, w *outbox.Writer, evs ...outbox.Event) []outbox.Written {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []outbox.Written
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		out, err = w.InsertTx(ctx, tx, evs...)
		return err
	})
	if err != nil {
		t.Fatalf("inserting outbox events: %v", err)
	}
	return out
}

// InsertRounds writes versions 1..versions of aggregates first..first+n-1,
// version by version (all v1, then all v2, ...), perTx events per
// transaction.
func InsertRounds(t testing.TB, pool *pgxpool.Pool, w *outbox.Writer, first, n, versions, perTx int) {
	t.Helper()
	batch := make([]outbox.Event, 0, perTx)
	flush := func() {
		if len(batch) > 0 {
			Insert(t, pool, w, batch...)
			batch = batch[:0]
		}
	}
	for v := 1; v <= versions; v++ {
		for a := first; a < first+n; a++ {
			batch = append(batch, Item(ID(a), int64(v), 0))
			if len(batch) == perTx {
				flush()
			}
		}
	}
	flush()
}
