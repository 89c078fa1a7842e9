package embedded

import (
	"strings"
	"testing"
)

// TestRunHelpAndUnknownFlagsStartNothing: --help exits 0 and an unknown
// flag 2, both before any connection (the environment names no database).
func TestRunHelpAndUnknownFlagsStartNothing(t *testing.T) {
	o := Options{Name: "orders"}
	getenv := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, ExitOK, "Usage: orders"},
		{[]string{"--bogus"}, ExitUsage, "flag provided but not defined: -bogus"},
		{nil, ExitUsage, "DATABASE_URL is required"},
	} {
		var stderr strings.Builder
		if code := run(tc.args, getenv, &stderr, o); code != tc.code || !strings.Contains(stderr.String(), tc.out) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.out)
		}
	}
}
