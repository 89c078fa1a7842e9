package relaytest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/relaytest"
)

// A schema alone: eventrelay's tables only, in that schema, one database
// per test.
func TestNewDBIsMigratedAndIsolated(t *testing.T) {
	o := relaytest.Options{Schema: "items"}
	a, b := relaytest.NewDB(t, o), relaytest.NewDB(t, o)
	if a.Name == b.Name {
		t.Fatal("two tests share a database")
	}
	if a.Schema != "items" {
		t.Fatalf("schema %q, want items", a.Schema)
	}
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `INSERT INTO admin_audit (command, requested_by, reason) VALUES ('c', 'b', 'r')`); err != nil {
		t.Fatalf("unqualified insert through search_path: %v", err)
	}
	var n, others int
	if err := b.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+b.Schema+`.admin_audit),
		(SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename NOT LIKE 'outbox\_%' AND tablename NOT LIKE 'inbox\_%'
			AND tablename NOT IN ('admin_audit', 'eventrelay_goose_db_version'))`, b.Schema).Scan(&n, &others); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d rows of database a", n)
	}
	if others != 0 {
		t.Fatalf("a database of eventrelay's set holds %d tables of no eventrelay kind", others)
	}
}

// relaytest has no default schema: NewDB without one fails the test and
// says what to set.
func TestNewDBNeedsASchema(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		relaytest.NewDB(ft, relaytest.Options{})
	}()
	if !strings.Contains(ft.msg, "Options.Schema is required") {
		t.Fatalf("NewDB without a schema: %q, want it to say Options.Schema is required", ft.msg)
	}
}

// fatalRecorder records the first Fatal and stops the caller there.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatal(args ...any) { f.msg = fmt.Sprint(args...); panic(f) }
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}
func (f *fatalRecorder) Helper() {}

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
	var outbox bool
	var schemas []string
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('orders.outbox_events') IS NOT NULL,
		ARRAY(SELECT nspname FROM pg_namespace WHERE nspname NOT IN ('public', 'information_schema') AND nspname NOT LIKE 'pg\_%' ORDER BY 1)`).Scan(&outbox, &schemas); err != nil {
		t.Fatal(err)
	}
	if !outbox || len(schemas) != 1 || schemas[0] != "orders" {
		t.Fatalf("orders.outbox_events %v, schemas %v; want true, [orders]", outbox, schemas)
	}
	// A second database of the same kind comes from the same template.
	if other := newOrdersDB(t); other.Name == db.Name {
		t.Fatal("two databases share a name")
	}
}
