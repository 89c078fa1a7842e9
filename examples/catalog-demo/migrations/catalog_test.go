package migrations_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	catalogmigrations "github.com/eventrelay/eventrelay/examples/catalog-demo/migrations"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relaytest"
)

// snapshot describes the tables of schema (columns, indexes, constraints;
// version tables left out) with the schema name removed, so two schemas
// built differently compare equal when their tables are the same.
func snapshot(t *testing.T, pool *pgxpool.Pool, schema string) []string {
	t.Helper()
	const q = `
SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable ||
       ' default=' || coalesce(column_default, '') || ' identity=' || is_identity
FROM information_schema.columns
WHERE table_schema = $1 AND table_name NOT LIKE '%goose_db_version'
UNION ALL
SELECT 'index ' || indexname || ' ' || indexdef
FROM pg_indexes
WHERE schemaname = $1 AND tablename NOT LIKE '%goose_db_version'
UNION ALL
SELECT 'constraint ' || c.relname || '.' || con.conname || ' ' || pg_get_constraintdef(con.oid) || ' valid=' || con.convalidated
FROM pg_constraint con
JOIN pg_class c ON c.oid = con.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname NOT LIKE '%goose_db_version'
ORDER BY 1`
	rows, err := pool.Query(context.Background(), q, schema)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		s, err := pgx.RowTo[string](r)
		return strings.ReplaceAll(s, schema+".", "SCHEMA."), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("schema %s holds no table", schema)
	}
	return out
}

func sameSnapshot(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for _, s := range want {
		if !slices.Contains(got, s) {
			t.Errorf("%s lacks: %s", what, s)
		}
	}
	for _, s := range got {
		if !slices.Contains(want, s) {
			t.Errorf("%s has in addition: %s", what, s)
		}
	}
}

// The SQL of the catalog's sets, applied by psql (statement by statement,
// as another migration tool would) to an empty schema, builds the same
// tables, indexes and constraints as goose does.
func TestPrintedSQLBuildsTheSameSchemaAsGoose(t *testing.T) {
	t.Parallel()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("SKIP: psql is not on PATH, so the printed SQL cannot be applied the way another tool would: ", err)
	}
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	var script strings.Builder
	for _, s := range catalogmigrations.Sets {
		text, err := migrations.SQL(s)
		if err != nil {
			t.Fatal(err)
		}
		script.WriteString(text)
	}
	if strings.Contains(script.String(), "+goose") || strings.Contains(script.String(), "DROP TABLE") {
		t.Fatalf("the SQL keeps goose annotations or down sections:\n%s", script.String())
	}
	if _, err := db.Pool.Exec(context.Background(), "CREATE SCHEMA plain"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db.URL, "-f", "-")
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path=plain")
	cmd.Stdin = strings.NewReader(script.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	sameSnapshot(t, "schema built from the SQL", snapshot(t, db.Pool, "plain"), snapshot(t, db.Pool, db.Schema))
}

// presplit is the single set eventrelay shipped before the split, as
// released (testdata/presplit), with its goose_db_version.
func presplit(t *testing.T) migrations.Set {
	sub, err := fs.Sub(os.DirFS("testdata"), "presplit")
	if err != nil {
		t.Fatal(err)
	}
	return migrations.Set{Name: "presplit", FS: sub, VersionTable: "goose_db_version"}
}

func count(t *testing.T, pool *pgxpool.Pool, table string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A database migrated by the pre-split release is adopted by Up: its
// goose_db_version becomes eventrelay_goose_db_version, the catalog set
// records itself, every row stays, and the tables equal a fresh install's.
func TestUpAdoptsThePreSplitLayoutKeepingEveryRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: []migrations.Set{presplit(t)}})
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO videos (id, uploader_id, title) VALUES (gen_random_uuid(), gen_random_uuid(), 'kept');
INSERT INTO outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type, ordering_key, topic, payload, occurred_at, status)
VALUES (gen_random_uuid(), 'catalog.video', 'a', 1, 'catalog.video.created', 'a', 't', '\x00', now(), 'resolved');
INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type) VALUES ('videos', gen_random_uuid(), 'catalog.video', 'a', 1, 'x');
INSERT INTO admin_audit (command, requested_by, reason) VALUES ('c', 'b', 'r');
INSERT INTO video_projection (video_id, uploader_id, title, description, duration_micros, status, media_status, analysis_status, version, created_at, source_updated_at, last_event_id, occurred_at)
VALUES (gen_random_uuid(), gen_random_uuid(), 't', '', 0, 'draft', 'pending', 'pending', 1, now(), now(), gen_random_uuid(), now());`); err != nil {
		t.Fatal(err)
	}
	tables := []string{"videos", "outbox_events", "inbox_events", "admin_audit", "video_projection"}

	// Before the adoption, status and down would read empty version tables.
	if _, err := migrations.Status(ctx, db.Pool, db.Schema, catalogmigrations.Sets...); err == nil || !strings.Contains(err.Error(), "pre-split") {
		t.Fatalf("Status before the adoption: %v, want a pre-split refusal", err)
	}
	if _, err := migrations.Down(ctx, db.Pool, db.Schema, catalogmigrations.Catalog, 0); err == nil || !strings.Contains(err.Error(), "pre-split") {
		t.Fatalf("Down before the adoption: %v, want a pre-split refusal", err)
	}

	res, err := migrations.Up(ctx, db.Pool, db.Schema, catalogmigrations.Sets...)
	if err != nil {
		t.Fatal(err)
	}
	// The pre-split release had the eventrelay migrations up to 00003 and
	// the catalog's 00001 (testdata/presplit); the later ones run as on any
	// older database.
	var ran []migrations.Migration
	for _, r := range res {
		if (r.Set == "eventrelay" && r.Version <= 3) || (r.Set == "catalog" && r.Version <= 1) {
			ran = append(ran, r)
		}
	}
	if len(ran) != 1 || ran[0].Set != "catalog" || ran[0].File != "00001_catalog.sql" {
		t.Fatalf("Up on the pre-split layout ran %+v, want only catalog/00001_catalog.sql besides eventrelay's migrations after 00003", res)
	}
	for _, tbl := range tables {
		if n := count(t, db.Pool, tbl); n != 1 {
			t.Errorf("%s holds %d rows after the adoption, want 1", tbl, n)
		}
	}
	var old bool
	if err := db.Pool.QueryRow(ctx, "SELECT to_regclass('catalog.goose_db_version') IS NOT NULL").Scan(&old); err != nil || old {
		t.Errorf("catalog.goose_db_version still there (%v, %v): the service's own goose table would collide with it", old, err)
	}
	st, err := migrations.Status(ctx, db.Pool, db.Schema, catalogmigrations.Sets...)
	if err != nil {
		t.Fatal(err)
	}
	eventrelayFiles, err := fs.Glob(migrations.Eventrelay.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	catalogFiles, err := fs.Glob(catalogmigrations.Catalog.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(eventrelayFiles) + len(catalogFiles); len(st) != want {
		t.Fatalf("status lists %d migrations, want %d: %+v", len(st), want, st)
	}
	for _, m := range st {
		if !m.Applied {
			t.Errorf("%s/%s pending after the adoption", m.Set, m.File)
		}
	}
	fresh := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: catalogmigrations.Sets})
	sameSnapshot(t, "adopted schema", snapshot(t, db.Pool, db.Schema), snapshot(t, fresh.Pool, fresh.Schema))

	// The adopted version table keeps working: goose's next id follows the
	// old rows.
	if _, err := migrations.Down(ctx, db.Pool, db.Schema, migrations.Eventrelay, 1); err != nil {
		t.Fatal(err)
	}
	if res, err := migrations.Up(ctx, db.Pool, db.Schema, catalogmigrations.Sets...); err != nil || len(res) != len(eventrelayFiles)-1 || res[0].File != "00002_outbox_resolved.sql" {
		t.Fatalf("down to 1 and up again: %+v, %v", res, err)
	}
}

// A goose_db_version that records versions the pre-split set never had is
// not eventrelay's: Up refuses and changes nothing.
func TestUpRefusesAnUnknownGooseTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := relaytest.NewDB(t, relaytest.Options{Schema: catalogmigrations.Schema, Migrations: []migrations.Set{presplit(t)}})
	if _, err := db.Pool.Exec(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (20240101, true)"); err != nil {
		t.Fatal(err)
	}
	_, err := migrations.Up(ctx, db.Pool, db.Schema, catalogmigrations.Sets...)
	if err == nil || !strings.Contains(err.Error(), "refusing to adopt") || !strings.Contains(err.Error(), "20240101") {
		t.Fatalf("Up: %v, want a refusal naming the unknown version", err)
	}
	var old, adopted bool
	if err := db.Pool.QueryRow(ctx, "SELECT to_regclass('catalog.goose_db_version') IS NOT NULL, to_regclass('catalog.eventrelay_goose_db_version') IS NOT NULL").Scan(&old, &adopted); err != nil {
		t.Fatal(err)
	}
	if !old || adopted {
		t.Errorf("after the refusal: goose_db_version %v, eventrelay_goose_db_version %v; want true, false", old, adopted)
	}
}
