package migrations_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/eventrelay/eventrelay/migrations"
)

func TestSQLKeepsUpStatementsAndDropsGooseAnnotations(t *testing.T) {
	set := migrations.Set{Name: "fn", VersionTable: "fn_goose_db_version", FS: fstest.MapFS{
		"00001_fn.sql": {Data: []byte(`-- A function needs StatementBegin/End in goose.
-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION one() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION one();
`)},
		"00002_idx.sql": {Data: []byte("-- +goose NO TRANSACTION\n-- +goose Up\nCREATE INDEX CONCURRENTLY t_idx ON t (a);\n-- +goose Down\nDROP INDEX t_idx;\n")},
	}}
	text, err := migrations.SQL(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"-- A function needs StatementBegin/End in goose.",
		"-- ==== 00001_fn.sql (goose runs this file in one transaction)",
		"CREATE FUNCTION one() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;",
		"-- ==== 00002_idx.sql (goose runs this file outside a transaction, statement by statement)",
		"CREATE INDEX CONCURRENTLY t_idx ON t (a);",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("SQL lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "+goose") || strings.Contains(text, "DROP") {
		t.Errorf("SQL keeps an annotation or a down statement:\n%s", text)
	}
	if strings.Index(text, "00001_fn.sql") > strings.Index(text, "00002_idx.sql") {
		t.Errorf("files out of version order:\n%s", text)
	}
}

func TestSQLRefusesWhatIsNotPlainSQL(t *testing.T) {
	for name, body := range map[string]string{
		"ENVSUB":         "-- +goose Up\n-- +goose ENVSUB ON\nCREATE TABLE ${T} (a int);\n",
		"no Up":          "CREATE TABLE t (a int);\n",
		"Down before Up": "-- +goose Down\nDROP TABLE t;\n-- +goose Up\nCREATE TABLE t (a int);\n",
	} {
		set := migrations.Set{Name: "bad", VersionTable: "bad_goose_db_version", FS: fstest.MapFS{"00001_bad.sql": {Data: []byte(body)}}}
		if text, err := migrations.SQL(set); err == nil || !strings.Contains(err.Error(), "00001_bad.sql") {
			t.Errorf("%s: SQL = %q, %v; want an error naming the file", name, text, err)
		}
	}
}
