package command

import (
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// TestSchemaFromDatabaseSchema: relayctl reads DATABASE_SCHEMA, as the
// daemons do; EVENTRELAY_SCHEMA still works with a deprecation warning and
// loses to DATABASE_SCHEMA; with neither, the service's Hooks.Schema.
func TestSchemaFromDatabaseSchema(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	exec(t, db, `CREATE SCHEMA other`)
	// failed list reads outbox_events in the chosen schema: a schema
	// without the tables fails naming the relation.
	for _, tc := range []struct {
		env      map[string]string
		wantCode int
		warn     bool
	}{
		{map[string]string{"DATABASE_SCHEMA": "other"}, ExitRuntime, false},
		{map[string]string{"EVENTRELAY_SCHEMA": "other"}, ExitRuntime, true},
		{map[string]string{"DATABASE_SCHEMA": db.Schema, "EVENTRELAY_SCHEMA": "other"}, ExitOK, true},
		{map[string]string{}, ExitOK, false},
	} {
		tc.env["DATABASE_URL"] = db.URL
		r := relayctl(t, tc.env, "failed", "list")
		if r.code != tc.wantCode {
			t.Errorf("env %v: exit %d, want %d (stderr %q)", tc.env, r.code, tc.wantCode, r.stderr)
		}
		if got := strings.Contains(r.stderr, "EVENTRELAY_SCHEMA is deprecated, set DATABASE_SCHEMA"); got != tc.warn {
			t.Errorf("env %v: deprecation warning %t, want %t (stderr %q)", tc.env, got, tc.warn, r.stderr)
		}
	}
}

// relayctl assumes no schema: a binary whose hooks name none, given no
// --schema, DATABASE_SCHEMA or search_path, refuses and says what to set;
// a search_path in the URL is enough.
func TestNoSchemaIsAssumed(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := relayctlWith(t, hook.Hooks{}, map[string]string{"DATABASE_URL": db.URL}, "failed", "list")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "no schema: set --schema or DATABASE_SCHEMA") || !strings.Contains(r.stderr, "relayctl.Hooks.Schema") {
		t.Fatalf("failed list without a schema: exit %d, stderr %q; want %d saying what to set", r.code, r.stderr, ExitUsage)
	}
	sep := "?"
	if strings.Contains(db.URL, "?") {
		sep = "&"
	}
	r = relayctlWith(t, hook.Hooks{}, map[string]string{"DATABASE_URL": db.URL + sep + "search_path=" + db.Schema}, "failed", "list")
	if r.code != ExitOK {
		t.Fatalf("failed list with the schema in the URL's search_path: exit %d, stderr %q", r.code, r.stderr)
	}
	r = relayctlWith(t, hook.Hooks{}, map[string]string{"DATABASE_URL": db.URL}, "failed", "list", "--schema", db.Schema)
	if r.code != ExitOK {
		t.Fatalf("failed list --schema: exit %d, stderr %q", r.code, r.stderr)
	}
}
