package hook_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relaytest"
)

var notesSet = migrations.Set{Name: "notes", VersionTable: "notes_goose_db_version", FS: fstest.MapFS{
	"00001_notes.sql": {Data: []byte(`-- +goose Up
CREATE TABLE notes (id text PRIMARY KEY, body text NOT NULL, version bigint NOT NULL);
CREATE TABLE note_views (note_id text PRIMARY KEY, body text NOT NULL, version bigint NOT NULL);
-- +goose Down
DROP TABLE note_views; DROP TABLE notes;
`)},
}}

func TestTableVerifier(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO notes VALUES ('ok', 'a', 2), ('missing', 'b', 1), ('stale', 'c', 3), ('ahead', 'd', 1), ('diverged', 'e', 1);
INSERT INTO note_views VALUES ('ok', 'a', 2), ('stale', 'c', 2), ('ahead', 'd', 2), ('diverged', 'x', 1), ('extra', 'f', 4);
`); err != nil {
		t.Fatal(err)
	}
	v := hook.TableVerifier{
		Noun:      "note",
		Source:    hook.Table{Name: "notes", Key: "id", Version: "version"},
		ReadModel: hook.Table{Name: "notes.note_views", Key: "note_id", Version: "version"},
		Columns:   map[string]string{"body": "body"},
	}
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rep, err := v.Verify(ctx, tx, hook.Env{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != 5 || len(rep.Stores) != 1 || rep.Stores[0].Rows != 5 {
		t.Fatalf("report %+v", rep)
	}
	got := map[string]hook.Sample{}
	for _, d := range rep.Stores[0].Drift {
		if d.Count != 1 || len(d.Samples) != 1 {
			t.Errorf("%s: %+v", d.Kind, d)
			continue
		}
		got[d.Kind] = d.Samples[0]
	}
	want := map[string]hook.Sample{
		"missing": {ID: "missing", SourceVersion: 1}, "extra": {ID: "extra", StoreVersion: 4},
		"stale": {ID: "stale", SourceVersion: 3, StoreVersion: 2}, "ahead": {ID: "ahead", SourceVersion: 1, StoreVersion: 2},
		"diverged": {ID: "diverged", SourceVersion: 1, StoreVersion: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("drift %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}
