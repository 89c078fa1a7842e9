package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	if os.Getenv("ORDERS_TEST_RUN_MAIN") == "1" { // the test binary as the orders command
		main()
	}
	os.Exit(m.Run())
}

// TestHelpAndUnknownFlagsStartNothing: --help prints the usage and exits 0,
// an unknown flag or argument exits 2, each without connecting or
// listening (the environment names a database and addresses it would use).
func TestHelpAndUnknownFlagsStartNothing(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--help"}, 0, "DATABASE_URL"},
		{[]string{"-h"}, 0, "HTTP_ADDR          HTTP listen address (default :8100)"},
		{[]string{"--port=8080"}, 2, "flag provided but not defined: -port"},
		{[]string{"serve"}, 2, `unexpected argument "serve"`},
		{[]string{"relayctl", "help"}, 0, "usage: relayctl <command>"},
		{[]string{"relayctl", "bogus"}, 2, `unknown command "bogus"`},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), "ORDERS_TEST_RUN_MAIN=1", "DATABASE_URL=postgres://127.0.0.1:1/orders",
			"PUBSUB_PROJECT_ID=orders-local", "HTTP_ADDR=127.0.0.1:0", "GRPC_ADDR=127.0.0.1:0")
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != tc.code || !strings.Contains(string(out), tc.out) || strings.Contains(string(out), "starting") {
			t.Errorf("orders %v: exit %d, output:\n%s\nwant exit %d, %q and nothing started", tc.args, code, out, tc.code, tc.out)
		}
	}
}
