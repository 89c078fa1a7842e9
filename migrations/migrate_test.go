package migrations_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// orders is a service's own set, as a service would write it.
var orders = migrations.Set{Name: "orders", VersionTable: "orders_goose_db_version", FS: fstest.MapFS{
	"00001_orders.sql": {Data: []byte(`-- +goose Up
CREATE TABLE orders (id uuid PRIMARY KEY, total bigint NOT NULL);
-- +goose Down
DROP TABLE orders;
`)},
	"00002_order_lines.sql": {Data: []byte(`-- +goose Up
CREATE TABLE order_lines (order_id uuid NOT NULL REFERENCES orders (id), sku text NOT NULL);
-- +goose Down
DROP TABLE order_lines;
`)},
}}

// relations lists the tables of schema.
// eventrelayFiles is the number of migrations in the Eventrelay set.
func eventrelayFiles(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.Eventrelay.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("listing the eventrelay set: %v, %v", files, err)
	}
	return len(files)
}

func relations(t *testing.T, db *relaytest.DB, schema string) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1", schema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Each set keeps its own version table, so a service's own goose table
// (goose_db_version, goose's default) lives next to eventrelay's.
func TestUpKeepsEachSetInItsOwnVersionTable(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "orders", Migrations: []migrations.Set{migrations.Eventrelay, orders}})
	ctx := context.Background()
	own := migrations.Set{Name: "own", VersionTable: "goose_db_version", FS: fstest.MapFS{
		"00001_customers.sql": {Data: []byte("-- +goose Up\nCREATE TABLE customers (id uuid PRIMARY KEY);\n-- +goose Down\nDROP TABLE customers;\n")},
	}}
	if _, err := migrations.Up(ctx, db.Pool, "orders", migrations.Eventrelay, own); err != nil {
		t.Fatalf("a set with goose's default version table next to eventrelay's: %v", err)
	}
	want := []string{"admin_audit", "customers", "eventrelay_goose_db_version", "goose_db_version", "inbox_events", "order_lines", "orders",
		"orders_goose_db_version", "outbox_claims", "outbox_events", "outbox_log_slots", "outbox_partitions", "outbox_publishers", "outbox_replays", "outbox_wakeups"}
	if got := relations(t, db, "orders"); !slices.Equal(got, want) {
		t.Fatalf("tables of schema orders: %v, want %v", got, want)
	}
	st, err := migrations.Status(ctx, db.Pool, "orders", migrations.Eventrelay, orders, own)
	if err != nil {
		t.Fatal(err)
	}
	var applied []string
	for _, m := range st {
		if !m.Applied || m.AppliedAt.IsZero() {
			t.Errorf("%s/%s: applied %v at %v, want applied", m.Set, m.File, m.Applied, m.AppliedAt)
		}
		applied = append(applied, m.Set+"/"+m.File)
	}
	wantApplied := []string{"eventrelay/00001_eventrelay.sql", "eventrelay/00002_outbox_resolved.sql", "eventrelay/00003_outbox_pending_key_idx.sql",
		"eventrelay/00004_outbox_partitions.sql", "eventrelay/00005_outbox_wakeups.sql", "eventrelay/00006_outbox_notify.sql",
		"eventrelay/00007_outbox_status_statistics.sql", "eventrelay/00008_outbox_fillfactor.sql", "eventrelay/00009_outbox_unannounced.sql", "eventrelay/00010_outbox_claims.sql",
		"eventrelay/00011_outbox_fillfactor_three_versions.sql", "eventrelay/00012_outbox_log_slots.sql", "eventrelay/00013_inbox_aggregate_idx.sql",
		"orders/00001_orders.sql", "orders/00002_order_lines.sql", "own/00001_customers.sql"}
	if !slices.Equal(applied, wantApplied) {
		t.Errorf("status: %v, want %v", applied, wantApplied)
	}
}

func TestDownThenUpAgain(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "orders", Migrations: []migrations.Set{migrations.Eventrelay, orders}})
	ctx := context.Background()

	res, err := migrations.Down(ctx, db.Pool, "orders", orders, 1)
	if err != nil || len(res) != 1 || res[0].File != "00002_order_lines.sql" || res[0].Applied {
		t.Fatalf("down orders to 1: %+v, %v", res, err)
	}
	if _, err := migrations.Down(ctx, db.Pool, "orders", orders, 0); err != nil {
		t.Fatal(err)
	}
	if res, err = migrations.Down(ctx, db.Pool, "orders", migrations.Eventrelay, 0); err != nil || len(res) != eventrelayFiles(t) {
		t.Fatalf("down eventrelay to 0: %+v, %v", res, err)
	}
	want := []string{"eventrelay_goose_db_version", "orders_goose_db_version"}
	if got := relations(t, db, "orders"); !slices.Equal(got, want) {
		t.Fatalf("tables after down to 0: %v, want only %v", got, want)
	}
	if _, err := migrations.Down(ctx, db.Pool, "orders", orders, -1); err == nil {
		t.Error("Down to version -1 succeeded")
	}

	res, err = migrations.Up(ctx, db.Pool, "orders", migrations.Eventrelay, orders)
	if want := eventrelayFiles(t) + 2; err != nil || len(res) != want {
		t.Fatalf("up again: %d applied, %v; want %d", len(res), err, want)
	}
	if res, err = migrations.Up(ctx, db.Pool, "orders", migrations.Eventrelay, orders); err != nil || len(res) != 0 {
		t.Fatalf("second up: %d applied, %v; want a no-op", len(res), err)
	}
}

// Eventrelay's tables without their version table (created by another
// tool from SQL, or the table dropped) give Up nothing to trust: it refuses
// and changes nothing.
func TestUpRefusesEventrelayTablesWithoutAVersionTable(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, "DROP TABLE eventrelay_goose_db_version"); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Up(ctx, db.Pool, db.Schema, migrations.Eventrelay)
	if err == nil || !strings.Contains(err.Error(), "not created by migrations.Up") {
		t.Fatalf("Up on eventrelay tables without a version table: %v, want a refusal", err)
	}
	if got := relations(t, db, db.Schema); slices.Contains(got, "eventrelay_goose_db_version") {
		t.Errorf("the refused Up created its version table: %v", got)
	}
}

func TestSetsAreValidated(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		sets []migrations.Set
		want string
	}{
		{nil, "no migration set"},
		{[]migrations.Set{{Name: "Bad", FS: orders.FS, VersionTable: "v"}}, `name "Bad"`},
		{[]migrations.Set{{Name: "x", FS: orders.FS}}, "VersionTable"},
		{[]migrations.Set{{Name: "x", VersionTable: "v"}}, "FS is nil"},
		{[]migrations.Set{{Name: "x", VersionTable: "v", FS: fstest.MapFS{"README": {}}}}, "no *.sql"},
		{[]migrations.Set{orders, orders}, "given twice"},
		{[]migrations.Set{migrations.Eventrelay, {Name: "x", FS: orders.FS, VersionTable: migrations.Eventrelay.VersionTable}}, "used by another set"},
	} {
		// Validation comes before any connection: a nil pool is never used.
		_, err := migrations.Up(ctx, nil, "s", c.sets...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Up(%v): %v, want an error with %q", c.sets, err, c.want)
		}
	}
}

// Concurrent Up calls on one schema (two migrate jobs, replicas migrating at
// start) apply each migration once and all succeed.
func TestConcurrentUpAppliesOnce(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	const callers = 4
	applied := make(chan int, callers)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			res, err := migrations.Up(ctx, db.Pool, "race", migrations.Eventrelay, orders)
			applied <- len(res)
			errs <- err
		}()
	}
	total := 0
	for range callers {
		total += <-applied
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if want := eventrelayFiles(t) + 2; total != want {
		t.Errorf("%d migrations applied in all, want %d (each once)", total, want)
	}
}

// A service's own goose_db_version (its versions 1 to 3) beside
// eventrelay's tables is not the pre-split layout unless a set names that
// layout's tables (Set.PreSplitTables): Up refuses as for any missing
// version table and renames nothing.
func TestUpAdoptsNoPreSplitLayoutNoSetNames(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `DROP TABLE eventrelay_goose_db_version;
		CREATE TABLE goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamptz DEFAULT now());
		INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true), (1, true), (2, true), (3, true)`); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Up(ctx, db.Pool, db.Schema, migrations.Eventrelay)
	if err == nil || !strings.Contains(err.Error(), "not created by migrations.Up") {
		t.Fatalf("Up beside a service's own goose_db_version: %v, want a refusal", err)
	}
	got := relations(t, db, db.Schema)
	if !slices.Contains(got, "goose_db_version") || slices.Contains(got, "eventrelay_goose_db_version") {
		t.Errorf("the refused Up renamed the service's goose_db_version: %v", got)
	}
}
