package command

import (
	"context"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

type testDB = testdb.DB

func newDB(t *testing.T) *testDB {
	return testdb.New(t, testdb.Options{Schema: testSchema, Migrations: []migrations.Set{migrations.Eventrelay, itemsSet}})
}

func port(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in test database url")
	}
	return u.Port()
}

// seedOutbox writes one created event per aggregate (pending rows).
func seedOutbox(t *testing.T, db *testDB, n int) []outbox.Written {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Encoder: testevent.Encode, DefaultTopic: "items.events"})
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]outbox.Event, n)
	for i := range evs {
		evs[i] = itemEvent(uuid.NewString(), "seeded", 1, false)
	}
	var out []outbox.Written
	err = pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
		out, err = w.InsertTx(context.Background(), tx, evs...)
		return err
	})
	if err != nil {
		t.Fatalf("seeding outbox: %v", err)
	}
	return out
}

// exec runs test-arrangement SQL.
func exec(t *testing.T, db *testDB, sql string, args ...any) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func count(t *testing.T, db *testDB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
