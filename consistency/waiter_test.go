package consistency_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestWaitWakesOnAnnouncementWithoutPolling shows a read waiting for a
// token: one look-up at the start, then woken by the announcement of the
// transaction that applied the version (no further look-ups), a timeout
// when nothing is announced, and a re-check when the announcement was too
// large to name its keys.
func TestWaitWakesOnAnnouncementWithoutPolling(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "kv"})
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE kv (id text PRIMARY KEY, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	channel := "applied_" + strings.ReplaceAll(t.Name(), "/", "_")
	var lookups atomic.Int64
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{DefaultWait: 300 * time.Millisecond, MaxWait: 5 * time.Second, Channel: channel})
	w.Register("kv-model", func(ctx context.Context, _, id string) (int64, error) {
		lookups.Add(1)
		var v int64
		err := db.Pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM kv WHERE id = $1`, id).Scan(&v)
		return v, err
	})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(runCtx)
	for !w.Listening() {
		time.Sleep(5 * time.Millisecond)
	}
	apply := func(id string, version int64, keys []consistency.Token) {
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, `INSERT INTO kv VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET version = excluded.version`, id, version); err != nil {
			t.Fatal(err)
		}
		if err := consistency.Announce(ctx, tx, channel, "kv-model", keys); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tok := consistency.Token{AggregateType: "kv", AggregateID: "k1", AggregateVersion: 2}

	// Nothing applied: the wait times out after one look-up.
	if err := w.Wait(ctx, "kv-model", []consistency.Token{tok}, 0); !errors.Is(err, consistency.ErrTimeout) {
		t.Fatalf("Wait with nothing applied = %v; want ErrTimeout", err)
	}
	if n := lookups.Swap(0); n != 1 {
		t.Fatalf("%d look-ups during a wait without announcements; want 1 (no polling)", n)
	}

	// Applied while waiting: woken by the announcement, no second look-up.
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- w.Wait(ctx, "kv-model", []consistency.Token{tok}, 5*time.Second) }()
	time.Sleep(100 * time.Millisecond)
	apply("k1", 1, []consistency.Token{{AggregateType: "kv", AggregateID: "k1", AggregateVersion: 1}}) // too old: keeps waiting
	apply("k1", 2, []consistency.Token{tok})
	if err := <-done; err != nil {
		t.Fatalf("Wait after the version was applied = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the wait took %s", d)
	}
	if n := lookups.Swap(0); n != 1 {
		t.Fatalf("%d look-ups; want 1 (the start), the announcement carried the key", n)
	}

	// Already there: answered by the first look-up.
	if err := w.Wait(ctx, "kv-model", []consistency.Token{tok}, 0); err != nil {
		t.Fatal(err)
	}

	// An announcement too large to name its keys makes waiters look up again.
	many := make([]consistency.Token, 0, 400)
	for i := range 400 {
		many = append(many, consistency.Token{AggregateType: "kv", AggregateID: fmt.Sprintf("filler-%03d-%s", i, strings.Repeat("x", 20)), AggregateVersion: 1})
	}
	many = append(many, consistency.Token{AggregateType: "kv", AggregateID: "k2", AggregateVersion: 1})
	lookups.Store(0)
	go func() {
		done <- w.Wait(ctx, "kv-model", []consistency.Token{{AggregateType: "kv", AggregateID: "k2", AggregateVersion: 1}}, 5*time.Second)
	}()
	time.Sleep(100 * time.Millisecond)
	apply("k2", 1, many)
	if err := <-done; err != nil {
		t.Fatalf("Wait after a truncated announcement = %v", err)
	}
	if n := lookups.Load(); n != 2 {
		t.Fatalf("%d look-ups; want 2 (the start and the re-check)", n)
	}
}

// TestTableLookup: the version column of the row with the key (a uuid
// key given as text), 0 without a row, and an id the key's type refuses
// is ErrMalformed.
func TestTableLookup(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "kv"})
	ctx := context.Background()
	id := "0191b2c4-5a6e-7f00-8000-000000000001"
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE item_views (item_id uuid PRIMARY KEY, version bigint NOT NULL);
		INSERT INTO item_views VALUES ('`+id+`', 7)`); err != nil {
		t.Fatal(err)
	}
	lookup := consistency.TableLookup(db.Pool, "item_views", "item_id", "version")
	if v, err := lookup(ctx, "items.item", id); v != 7 || err != nil {
		t.Errorf("lookup of a row: %d, %v; want 7", v, err)
	}
	if v, err := lookup(ctx, "items.item", "0191b2c4-5a6e-7f00-8000-000000000002"); v != 0 || err != nil {
		t.Errorf("lookup without a row: %d, %v; want 0", v, err)
	}
	if _, err := lookup(ctx, "items.item", "not-a-uuid"); !errors.Is(err, consistency.ErrMalformed) {
		t.Errorf("lookup of an id the key's type refuses: %v, want ErrMalformed", err)
	}
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{})
	w.Register("items", lookup)
	if err := w.Wait(ctx, "items", []consistency.Token{{AggregateType: "items.item", AggregateID: "not-a-uuid", AggregateVersion: 1}}, 0); !errors.Is(err, consistency.ErrMalformed) {
		t.Errorf("Wait for a token the key's type refuses: %v, want ErrMalformed", err)
	}
}

// TestInboxLookup: the inbox lookup answers with the highest version the
// consumer recorded for the aggregate, of no other consumer or aggregate:
// a read model of any shape (totals per customer) waits on it.
func TestInboxLookup(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "kv"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type)
		VALUES ('totals', gen_random_uuid(), 'shop.order', 'o1', 2, 'placed'), ('totals', gen_random_uuid(), 'shop.order', 'o1', 3, 'paid'),
		('other', gen_random_uuid(), 'shop.order', 'o1', 8, 'paid'), ('totals', gen_random_uuid(), 'shop.order', 'o2', 5, 'paid')`); err != nil {
		t.Fatal(err)
	}
	lookup := consistency.InboxLookup(db.Pool, "totals")
	for id, want := range map[string]int64{"o1": 3, "o2": 5, "o3": 0} {
		if v, err := lookup(ctx, "shop.order", id); v != want || err != nil {
			t.Errorf("lookup of %s: %d, %v; want %d", id, v, err, want)
		}
	}
	w := consistency.NewWaiter(db.Pool, consistency.WaiterOptions{})
	w.Register("customer-totals", lookup)
	if err := w.Wait(ctx, "customer-totals", []consistency.Token{{AggregateType: "shop.order", AggregateID: "o1", AggregateVersion: 3}}, 0); err != nil {
		t.Errorf("Wait for a recorded version: %v", err)
	}
	if err := w.Wait(ctx, "customer-totals", []consistency.Token{{AggregateType: "shop.order", AggregateID: "o1", AggregateVersion: 4}}, 100*time.Millisecond); !errors.Is(err, consistency.ErrTimeout) {
		t.Errorf("Wait for a version not recorded: %v, want ErrTimeout", err)
	}
}
