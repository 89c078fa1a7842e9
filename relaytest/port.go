package relaytest

import "github.com/eventrelay/eventrelay/internal/ops/opstest"

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, for
// a process an end-to-end test starts (a daemon, an emulator). It is chosen
// below the kernel's ephemeral range, so a process the test restarts on
// the same port finds it still free: an ephemeral port may meanwhile be an
// outgoing connection's local port or sit in TIME_WAIT.
func FreePort() (int, error) { return opstest.FreeLocalPort() }
