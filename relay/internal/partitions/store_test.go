package partitions_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/relay/internal/partitions"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestLeaveWaitsForAHeartbeatStillCommitting checks that a replica's
// heartbeat and its leave are serialized. A replica cancelled at shutdown
// returns from its heartbeat while the server may still be committing it,
// and then leaves: a leave that did not wait would miss the partitions
// that commit acquired, and they would wait for their lease. The heartbeat
// in flight is an open transaction of the heartbeat's own statements.
func TestLeaveWaitsForAHeartbeatStillCommitting(t *testing.T) {
	t.Parallel()
	ctx, db, store := newStore(t)

	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	q := outboxdb.New(tx)
	if err := q.LockOutboxPublisher(ctx, "replica-a"); err != nil {
		t.Fatal(err)
	}
	acquired, err := q.AcquireOutboxPartitions(ctx, outboxdb.AcquireOutboxPartitionsParams{WorkerID: "replica-a", TtlSeconds: 8, Wanted: 64})
	if err != nil || len(acquired) == 0 {
		t.Fatalf("setup: the heartbeat acquired %d partitions (%v)", len(acquired), err)
	}

	var released int64
	var leaveErr error
	left := make(chan struct{})
	go func() {
		defer close(left)
		released, leaveErr = store.Leave(ctx, "replica-a")
	}()
	waitForAdvisoryLockWaiter(ctx, t, db.Pool, left, "Leave")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-left
	if leaveErr != nil || released != int64(len(acquired)) {
		t.Fatalf("Leave after the heartbeat committed: %d released (%v), want the %d it acquired", released, leaveErr, len(acquired))
	}
	owners, err := store.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range owners {
		if p.Owner != "" {
			t.Errorf("partition %d is still owned by %s after it left", p.Partition, p.Owner)
		}
	}

	// The heartbeat takes the same lock: it waits for a leave (or another
	// heartbeat) of its replica.
	tx, err = db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := outboxdb.New(tx).LockOutboxPublisher(ctx, "replica-a"); err != nil {
		t.Fatal(err)
	}
	var beatErr error
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		_, beatErr = store.Heartbeat(ctx, partitions.HeartbeatRequest{Worker: "replica-a", TTL: 8 * time.Second})
	}()
	waitForAdvisoryLockWaiter(ctx, t, db.Pool, beaten, "Heartbeat")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	<-beaten
	if beatErr != nil {
		t.Fatal(beatErr)
	}
}

// newStore returns a context bounded for the test, a fresh database and a
// partitions Store on it.
func newStore(t *testing.T) (context.Context, *relaytest.DB, *partitions.Store) {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx, db, partitions.NewStore(db.Pool)
}

// waitForAdvisoryLockWaiter waits until a backend of the test's database
// waits on an advisory lock, and fails the test if what, which should be
// that backend's caller, returns (done closed) first.
func waitForAdvisoryLockWaiter(ctx context.Context, t *testing.T, pool *pgxpool.Pool, done <-chan struct{}, what string) {
	t.Helper()
	for {
		select {
		case <-done:
			t.Fatalf("%s returned while its replica's lock was held, want it to wait", what)
		default:
		}
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never waited on its replica's lock", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
