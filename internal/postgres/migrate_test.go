package postgres_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/catalogdb"
	"github.com/eventrelay/eventrelay/relaytest"
)

var tables = []string{"videos", "outbox_events", "outbox_replays", "admin_audit", "inbox_events", "video_projection"}

// present returns which of tables exist in schema.
func present(t *testing.T, db *relaytest.DB, schema string) []string {
	t.Helper()
	var out []string
	for _, tbl := range tables {
		var ok bool
		if err := db.Pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", schema+"."+tbl).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			out = append(out, tbl)
		}
	}
	return out
}

func newMigrator(t *testing.T, c postgres.Config) *postgres.Migrator {
	t.Helper()
	m, err := postgres.NewMigrator(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t) // migrated up by the template
	ctx := context.Background()
	m := newMigrator(t, db.Config())

	st, err := m.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) == 0 {
		t.Fatal("no migrations embedded")
	}
	for _, s := range st {
		if s.State != "applied" {
			t.Errorf("migration %s is %s on a relaytest database, want applied", s.Source.Path, s.State)
		}
	}
	if got := present(t, db, relaytest.Schema); len(got) != len(tables) {
		t.Fatalf("tables after up: %v, want %v", got, tables)
	}

	down, err := m.DownTo(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(down) != len(st) {
		t.Errorf("rolled back %d migrations, want %d", len(down), len(st))
	}
	if got := present(t, db, relaytest.Schema); len(got) != 0 {
		t.Errorf("tables after down: %v, want none", got)
	}
	if _, err := m.Down(ctx); err == nil {
		t.Error("Down with nothing applied succeeded")
	}

	up, err := m.Up(ctx)
	if err != nil {
		t.Fatalf("up again: %v", err)
	}
	if len(up) != len(st) {
		t.Errorf("applied %d migrations, want %d", len(up), len(st))
	}
	if got := present(t, db, relaytest.Schema); len(got) != len(tables) {
		t.Errorf("tables after up again: %v, want %v", got, tables)
	}
	again, err := m.Up(ctx)
	if err != nil || len(again) != 0 {
		t.Errorf("second up: %d applied, %v; want a no-op", len(again), err)
	}
	// The schema works after the round trip.
	if _, err := catalogdb.New(db.Pool).InsertVideo(ctx, catalogdb.InsertVideoParams{
		ID: uuid.New(), UploaderID: uuid.New(), Title: "t", Status: "draft", MediaStatus: "pending", AnalysisStatus: "pending",
	}); err != nil {
		t.Errorf("insert after up/down/up: %v", err)
	}
}

func TestMigrationsTargetTheConfiguredSchema(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t)
	ctx := context.Background()
	cfg := postgres.Config{URL: db.URL, Schema: "svc_two"}
	if _, err := newMigrator(t, cfg).Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got := present(t, db, "svc_two"); len(got) != len(tables) {
		t.Fatalf("tables in svc_two: %v, want %v", got, tables)
	}

	// A pool opened on that schema runs the unqualified sqlc queries there.
	pool, err := postgres.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	id := uuid.New()
	if _, err := catalogdb.New(pool).InsertVideo(ctx, catalogdb.InsertVideoParams{
		ID: id, UploaderID: uuid.New(), Title: "t", Status: "draft", MediaStatus: "pending", AnalysisStatus: "pending",
	}); err != nil {
		t.Fatal(err)
	}
	var inTwo, inDefault int
	if err := db.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM svc_two.videos), (SELECT count(*) FROM catalog.videos)").Scan(&inTwo, &inDefault); err != nil {
		t.Fatal(err)
	}
	if inTwo != 1 || inDefault != 0 {
		t.Errorf("rows: svc_two %d, catalog %d; want 1, 0", inTwo, inDefault)
	}
}

func TestNewMigratorRefusesBadConfig(t *testing.T) {
	for _, c := range []postgres.Config{
		{},
		{URL: "postgres://u@127.0.0.1:1/db", Schema: "Bad-Schema"},
	} {
		if _, err := postgres.NewMigrator(context.Background(), c); err == nil {
			t.Errorf("NewMigrator(%+v) succeeded", c)
		}
	}
}
