package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relaytest"
)

// A session frozen inside a transaction (the publisher's claim lock holder
// under SIGSTOP) is ended by the server, and its locks go with it.
func TestIdleInTransactionTimeoutReleasesLocks(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := postgres.Config{URL: db.URL, Schema: db.Schema}
	cfg.IdleInTransactionTimeout = 300 * time.Millisecond
	frozen, err := postgres.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close()

	tx, err := frozen.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // hands the (dead) connection back before frozen.Close
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(42)"); err != nil {
		t.Fatal(err)
	}
	// The holder now sends nothing: another session must get the lock.
	start := time.Now()
	if _, err := db.Pool.Exec(ctx, "SELECT pg_advisory_lock(42)"); err != nil {
		t.Fatalf("waiting for the frozen session's lock: %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("lock came free only after %s", waited)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatal("the frozen session's transaction survived the timeout")
	}
}
