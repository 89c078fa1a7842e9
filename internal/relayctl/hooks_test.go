package relayctl

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
