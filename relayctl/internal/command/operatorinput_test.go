package command

import (
	"strings"
	"testing"
)

// TestOperatorInputContradictionsRefused: blank --by/--why, a repeated or
// unknown --reason and --all with a filter are usage errors (exit 2)
// naming the flag, before anything is read or changed.
func TestOperatorInputContradictionsRefused(t *testing.T) {
	t.Parallel()
	// No store is configured: a case that got past validation would fail
	// with another message.
	env := map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--ids", "1", "--by", "alice", "--why", "   "}, "--why is required"},
		{[]string{"replay", "--ids", "1", "--by", " ", "--why", "INC-1"}, "--by is required"},
		{[]string{"rebuild", "--by", "\t", "--why", " "}, "--by and --why are required"},
		{[]string{"replay", "--reason", "payload_invalid", "--reason", "topic_not_found", "--dry-run"}, `given twice ("payload_invalid", then "topic_not_found")`},
		{[]string{"failed", "list", "--reason", "payload_invalid", "--reason", "unavailable"}, "one reason per run"},
		{[]string{"replay", "--reason", "payload_invlid", "--dry-run"}, `unknown reason "payload_invlid"`},
		{[]string{"dlq", "list", "--subscription", "s", "--reason", "bogus"}, `unknown reason "bogus"`},
		{[]string{"replay", "--ids", "1", "--all", "--dry-run"}, "--all selects every row; it contradicts"},
		{[]string{"dlq", "purge", "--subscription", "s", "--ids", "m1", "--all", "--dry-run"}, "--all selects every pulled message; it contradicts"},
	}
	for _, tc := range cases {
		r := relayctl(t, env, tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("relayctl %q: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.stderr, ExitUsage, tc.want)
		}
	}
	// The DLQ's own reason is accepted there (and only there).
	if r := relayctl(t, env, "dlq", "list", "--subscription", "s", "--reason", "max_delivery_attempts", "--project", "bad id!"); strings.Contains(r.stderr, "unknown reason") {
		t.Errorf("dlq list --reason max_delivery_attempts refused: %q", r.stderr)
	}
	if r := relayctl(t, env, "replay", "--reason", "max_delivery_attempts", "--dry-run"); r.code != ExitUsage || !strings.Contains(r.stderr, "unknown reason") {
		t.Errorf("replay --reason max_delivery_attempts: exit %d, stderr %q", r.code, r.stderr)
	}
}
