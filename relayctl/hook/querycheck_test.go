package hook_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/relayctl/hook"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestQueryCheckCatchesWhatTableVerifierMisses: a read model whose rows
// hold the right versions but a wrong derived total converges for a
// version-only TableVerifier and drifts for the service's QueryCheck;
// Verifiers reports both stores, the noun and counts of the first.
func TestQueryCheckCatchesWhatTableVerifierMisses(t *testing.T) {
	db := relaytest.NewDB(t, relaytest.Options{Schema: "notes", Migrations: []migrations.Set{migrations.Eventrelay, notesSet}})
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `
INSERT INTO notes VALUES ('a', 'x', 1), ('b', 'yy', 2);
INSERT INTO note_views VALUES ('a', 'x', 1), ('b', 'yyy', 2);`); err != nil {
		t.Fatal(err)
	}
	versions := hook.TableVerifier{Noun: "note", Source: hook.Table{Name: "notes", Key: "id", Version: "version"},
		ReadModel: hook.Table{Name: "note_views", Key: "note_id", Version: "version"}}
	lengths := hook.QueryCheck{Store: "postgres note_views (total length)", Query: `
		SELECT 'all', s.n::text, v.n::text FROM (SELECT sum(length(body)) AS n FROM notes) s, (SELECT sum(length(body)) AS n FROM note_views) v
		WHERE s.n IS DISTINCT FROM v.n`}
	tx, err := db.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	rep, err := hook.Verifiers{versions, lengths}.Verify(ctx, tx, hook.Env{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Noun != "note" || rep.Rows != 2 || len(rep.Stores) != 2 {
		t.Fatalf("report %+v, want the note counts and two stores", rep)
	}
	if d := rep.Stores[0].Drift; len(d) != 0 {
		t.Errorf("version-only TableVerifier: drift %+v, want none (it cannot see the total)", d)
	}
	s := rep.Stores[1]
	if !s.Checked || len(s.Drift) != 1 || s.Drift[0].Kind != "diverged" || s.Drift[0].Count != 1 || s.Note != "all: source 3, read model 4" {
		t.Errorf("QueryCheck store %+v, want one diverged key noted", s)
	}
}
