package opstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"testing"
)

// Ports are picked below the kernel's ephemeral range (Linux default
// 32768-60999). A daemon that a test restarts on the same port needs the
// port to stay free while it is down; inside the ephemeral range any
// outgoing connection may take it as its local port meanwhile, or hold it
// in TIME_WAIT, and the restart fails with "address already in use".
const (
	lowestPort  = 10000
	defaultHigh = 32768
)

// FreeLocalPort returns a TCP port on 127.0.0.1 that was free a moment
// ago, chosen outside the ephemeral port range.
func FreeLocalPort() (int, error) {
	high := ephemeralLow()
	for range 200 {
		port := lowestPort + rand.IntN(high-lowestPort)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port in 127.0.0.1:%d-%d after 200 tries", lowestPort, high-1)
}

// FreePort is FreeLocalPort for tests: it fails t when no port is free.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := FreeLocalPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	var lo, hi int
	if err != nil {
		return defaultHigh
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= lowestPort+1000 {
		return defaultHigh
	}
	return lo
}
