package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestClaimsMigrationHandsBackRowsInFlight checks 00010 on a schema with
// a row the previous claim protocol holds ('publishing'): the row is
// handed back pending and ready with a lease_expired entry, the reclaim's
// index is dropped, and Down restores it.
func TestClaimsMigrationHandsBackRowsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "orders", Migrations: []migrations.Set{migrations.Eventrelay, orders}})
	if _, err := migrations.Down(ctx, db.Pool, "orders", migrations.Eventrelay, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO orders.outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version,
			event_type, ordering_key, topic, payload, occurred_at, status, locked_by, lock_token, lease_until, claimed_at)
		VALUES (gen_random_uuid(), 'order', 'o1', 1, 'order.created', 'order/o1', 'orders', '\x00', now(),
			'publishing', 'w-old', gen_random_uuid(), now() + interval '1 minute', now())`); err != nil {
		t.Fatal(err)
	}
	index := func() bool {
		var ok bool
		if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('orders.outbox_events_publishing_idx') IS NOT NULL`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !index() {
		t.Fatal("outbox_events_publishing_idx missing at version 9")
	}
	if _, err := migrations.Up(ctx, db.Pool, "orders", migrations.Eventrelay); err != nil {
		t.Fatal(err)
	}
	var status, history string
	var locked bool
	if err := db.Pool.QueryRow(ctx, `SELECT status, lock_token IS NOT NULL, error_history::text FROM orders.outbox_events`).Scan(&status, &locked, &history); err != nil {
		t.Fatal(err)
	}
	if status != "pending" || locked || !strings.Contains(history, "lease_expired") || !strings.Contains(history, "w-old") {
		t.Fatalf("row in flight after the migration: status %s, locked %v, history %s", status, locked, history)
	}
	if index() {
		t.Fatal("outbox_events_publishing_idx kept")
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE orders.outbox_events SET status = 'publishing'`); err == nil || !strings.Contains(err.Error(), "outbox_events_claim_keeps_pending") {
		t.Fatalf("a write of status publishing after the migration: %v, want the check violation", err)
	}
	if _, err := migrations.Down(ctx, db.Pool, "orders", migrations.Eventrelay, 9); err != nil {
		t.Fatal(err)
	}
	if !index() {
		t.Fatal("Down did not restore outbox_events_publishing_idx")
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE orders.outbox_events SET status = 'publishing'`); err != nil {
		t.Fatalf("status publishing after Down: %v", err)
	}
}
