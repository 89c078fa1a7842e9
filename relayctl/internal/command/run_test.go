package command

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// result is the outcome of one relayctl invocation.
type result struct {
	code   int
	stdout string
	stderr string
}

// relayctl runs the CLI as the binary does, with an empty environment plus
// env, so tests never pick up the developer's DATABASE_URL by accident.
func relayctl(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	r := relayctlQuiet(t, env, args...)
	t.Logf("relayctl %s -> %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	return r
}

// relayctlQuiet is relayctl without logging (for polling loops).
func relayctlQuiet(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return relayctlWith(t, itemHooks(), env, args...)
}

// relayctlWith runs the CLI with the given hooks instead of the tests'
// service's.
func relayctlWith(t *testing.T, hooks hook.Hooks, env map[string]string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	c := &cli{stdout: &out, stderr: &errb, hooks: hooks, lookup: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}}
	code := run(ctx, args, c)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestUsageAndHelp(t *testing.T) {
	t.Parallel()
	if r := relayctl(t, nil); r.code != ExitUsage {
		t.Fatalf("no args: exit %d, want %d", r.code, ExitUsage)
	}
	if r := relayctl(t, nil, "--help"); r.code != ExitOK || !strings.Contains(r.stderr, "migrate") {
		t.Fatalf("--help: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := relayctl(t, nil, "nope"); r.code != ExitUsage || !strings.Contains(r.stderr, `unknown command "nope"`) {
		t.Fatalf("unknown command: exit %d, stderr %q", r.code, r.stderr)
	}
	for name := range commands {
		if r := relayctl(t, nil, name, "--help"); r.code != ExitOK || !strings.Contains(r.stderr, "usage: relayctl "+name) {
			t.Errorf("%s --help: exit %d, stderr %q", name, r.code, r.stderr)
		}
	}
}
