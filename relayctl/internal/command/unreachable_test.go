package command

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/testdb"
)

// TestReadCommandsExitThreeOnUnreachableStores: with a store on a closed
// local port every read command exits 3 naming the store, promptly (not
// "0 message(s) match" with exit 0, not after a long wait).
func TestReadCommandsExitThreeOnUnreachableStores(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	closedPS := fmt.Sprintf("127.0.0.1:%d", opstest.FreePort(t))
	closedPG := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/eventrelay?sslmode=disable", opstest.FreePort(t))
	closedSearch := fmt.Sprintf("127.0.0.1:%d", opstest.FreePort(t))

	psDown := map[string]string{"DATABASE_URL": db.URL, "PUBSUB_PROJECT_ID": gpubsubtest.Project, "PUBSUB_EMULATOR_HOST": closedPS}
	pgDown := map[string]string{"DATABASE_URL": closedPG}
	searchDown := map[string]string{"DATABASE_URL": db.URL, "ITEM_SEARCH_ADDR": closedSearch}
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{psDown, []string{"dlq", "list", "--subscription", "items.events.dlq-view"}, "Pub/Sub unreachable: the emulator at " + closedPS},
		{psDown, []string{"dlq", "show", "--subscription", "items.events.dlq-view", "--ids", "m1"}, "Pub/Sub unreachable"},
		{psDown, []string{"status", "-f", pubsubConfig}, "Pub/Sub unreachable"},
		{psDown, []string{"snapshot", "list"}, "Pub/Sub unreachable"},
		{pgDown, []string{"status"}, "Postgres unreachable"},
		{pgDown, []string{"failed", "list"}, "Postgres unreachable"},
		{pgDown, []string{"verify"}, "Postgres unreachable"},
		{pgDown, []string{"migrate", "status"}, "Postgres unreachable"},
		{searchDown, []string{"verify"}, "search store at " + closedSearch + " unreachable"},
	}
	for _, tc := range cases {
		args := append(tc.args, "--connect-timeout", "1s")
		r := relayctl(t, tc.env, args...)
		if r.code != ExitRuntime || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("relayctl %s: exit %d, stderr %q; want exit %d and %q", strings.Join(args, " "), r.code, r.stderr, ExitRuntime, tc.want)
		}
	}
	if r := relayctl(t, psDown, "status", "--connect-timeout", "0s"); r.code != ExitUsage || !strings.Contains(r.stderr, "--connect-timeout must be > 0") {
		t.Errorf("--connect-timeout 0s: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestWrongPasswordIsNotUnreachable: Postgres refusing the credentials is
// said as such (exit 3), not "unreachable". The role is the one whose
// password the test server checks (scripts/pg.sh).
func TestWrongPasswordIsNotUnreachable(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	dsn := testdb.PasswordRoleURL(t, db.Pool, db.URL, "wrong")
	r := relayctl(t, map[string]string{"DATABASE_URL": dsn}, "status", "--connect-timeout", "5s")
	if r.code != ExitRuntime || !strings.Contains(r.stderr, "Postgres refused the credentials") || !strings.Contains(r.stderr, "authentication_failed") ||
		strings.Contains(r.stderr, "unreachable") || strings.Contains(r.stderr, "wrong") {
		t.Errorf("relayctl status with a wrong password: exit %d, stderr %q; want exit %d, the credentials refused (authentication_failed), no password shown", r.code, r.stderr, ExitRuntime)
	}
}
