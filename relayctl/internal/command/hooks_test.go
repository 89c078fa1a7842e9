package command

import (
	"strings"
	"testing"

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
// a service's relayctl adds its own tables.
func TestMigrateSetsComeFromTheHooks(t *testing.T) {
	t.Parallel()
	own := relayctlWith(t, hook.Hooks{}, nil, "migrate", "sql")
	if own.code != ExitOK || !strings.Contains(own.stdout, "outbox_events") || strings.Contains(own.stdout, "item_view") {
		t.Fatalf("migrate sql without a Migrations hook: exit %d; want eventrelay's tables only", own.code)
	}
	if r := relayctlWith(t, hook.Hooks{}, nil, "migrate", "sql", "--set", "items"); r.code != ExitUsage || !strings.Contains(r.stderr, "sets: eventrelay") {
		t.Fatalf("migrate sql --set items without the service's hook: exit %d, stderr %q", r.code, r.stderr)
	}
	svc := relayctlWith(t, itemHooks(), nil, "migrate", "sql")
	if svc.code != ExitOK || !strings.Contains(svc.stdout, "outbox_events") || !strings.Contains(svc.stdout, "item_view") {
		t.Fatalf("migrate sql with the service's hooks: exit %d; want both sets", svc.code)
	}
}
