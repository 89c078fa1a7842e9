package relayctl

import (
	"strings"
	"testing"
)

// TestSchemaFromDatabaseSchema: relayctl reads DATABASE_SCHEMA, as the
// daemons do; EVENTRELAY_SCHEMA still works with a deprecation warning and
// loses to DATABASE_SCHEMA (issue 14).
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
