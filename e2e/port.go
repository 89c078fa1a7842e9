package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// below the kernel's ephemeral range: a daemon restarted on it finds it
// free, where an ephemeral port may meanwhile be any outgoing
// connection's local port or sit in TIME_WAIT.
func FreePort() (int, error) {
	const lowest = 10000
	high := ephemeralLow()
	for range 200 {
		port := lowest + rand.IntN(high-lowest)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("finding a free port: none in 127.0.0.1:%d-%d after 200 tries", lowest, high-1)
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default 32768 when unreadable or implausibly low).
func ephemeralLow() int {
	lo, hi := 0, 0
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil || lo <= 11000 {
		return 32768
	}
	return lo
}
