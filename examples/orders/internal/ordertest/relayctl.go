package ordertest

import (
	"bytes"
	"context"
	"testing"

	"github.com/eventrelay/eventrelay/relayctl"

	"github.com/eventrelay/eventrelay/examples/orders/internal/admin"
)

// Relayctl runs eventrelay's command set with the orders hooks
// (admin.Hooks; the command line names the schema) and returns its exit
// code and output (stdout then stderr).
func Relayctl(t testing.TB, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := relayctl.Main(context.Background(), args, &out, &errb, admin.Hooks)
	return code, out.String() + errb.String()
}
