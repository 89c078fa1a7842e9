package relayctl

import (
	"strings"
	"testing"

	"github.com/eventrelay/eventrelay/internal/catalog/admin"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// A binary without a hook says so, and how to add one, instead of
// touching a table it does not know.
func TestCommandsWithoutHooksSayHowToAddOne(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify"}, "no Verifier"},
		{[]string{"rebuild", "--dry-run"}, "no Rebuilder"},
		{[]string{"rebuild", "--reindex", "--restate=false", "--dry-run"}, "no Reindexer"},
	} {
		r := relayctlWith(t, hook.Hooks{}, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/none"}, c.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "relayctl.Main(") {
			t.Errorf("%q without hooks: exit %d, stderr %q; want %d saying %q and how to add one", c.args, r.code, r.stderr, ExitUsage, c.want)
		}
	}
}

// migrate works on the hook's sets: eventrelay's own alone without one,
// the catalog's relayctl adds the catalog's tables.
func TestMigrateSetsComeFromTheHooks(t *testing.T) {
	t.Parallel()
	own := relayctlWith(t, hook.Hooks{}, nil, "migrate", "sql")
	if own.code != ExitOK || !strings.Contains(own.stdout, "outbox_events") || strings.Contains(own.stdout, "video_projection") {
		t.Fatalf("migrate sql without a Migrations hook: exit %d; want eventrelay's tables only", own.code)
	}
	if r := relayctlWith(t, hook.Hooks{}, nil, "migrate", "sql", "--set", "catalog"); r.code != ExitUsage || !strings.Contains(r.stderr, "sets: eventrelay") {
		t.Fatalf("migrate sql --set catalog without the catalog's hook: exit %d, stderr %q", r.code, r.stderr)
	}
	cat := relayctlWith(t, admin.Hooks(), nil, "migrate", "sql")
	if cat.code != ExitOK || !strings.Contains(cat.stdout, "outbox_events") || !strings.Contains(cat.stdout, "video_projection") {
		t.Fatalf("migrate sql with the catalog's hooks: exit %d; want both sets", cat.code)
	}
}
