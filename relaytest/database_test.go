package relaytest_test

import (
	"context"
	"testing"

	"github.com/eventrelay/eventrelay/relaytest"
)

// Zero config: eventrelay's tables only, in DefaultSchema, one database per
// test.
func TestNewDBIsMigratedAndIsolated(t *testing.T) {
	a, b := relaytest.NewDB(t), relaytest.NewDB(t)
	if a.Name == b.Name {
		t.Fatal("two tests share a database")
	}
	if a.Schema != relaytest.DefaultSchema {
		t.Fatalf("schema %q, want %q", a.Schema, relaytest.DefaultSchema)
	}
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO admin_audit (command, requested_by, reason) VALUES ('c', 'b', 'r')`); err != nil {
		t.Fatalf("unqualified insert through search_path: %v", err)
	}
	var n int
	var videos bool
	if err := b.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+b.Schema+`.admin_audit), to_regclass('videos') IS NOT NULL`).Scan(&n, &videos); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d rows of database a", n)
	}
	if videos {
		t.Fatal("the zero-config database holds the catalog's videos table")
	}
}

// A service's schema and sets (newOrdersDB is the example's helper).
func TestNewDBTakesTheSchemaAndSets(t *testing.T) {
	db := newOrdersDB(t)
	ctx := context.Background()
	if db.Schema != "orders" {
		t.Fatalf("schema %q, want orders", db.Schema)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO orders (id, total) VALUES (gen_random_uuid(), 3)`); err != nil {
		t.Fatalf("the service's table through search_path: %v", err)
	}
	var outbox, inDefault bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('orders.outbox_events') IS NOT NULL, to_regnamespace($1) IS NOT NULL`, relaytest.DefaultSchema).Scan(&outbox, &inDefault); err != nil {
		t.Fatal(err)
	}
	if !outbox || inDefault {
		t.Fatalf("orders.outbox_events %v, schema %s present %v; want true, false", outbox, relaytest.DefaultSchema, inDefault)
	}
	// A second database of the same kind comes from the same template.
	if other := newOrdersDB(t); other.Name == db.Name {
		t.Fatal("two databases share a name")
	}
}
