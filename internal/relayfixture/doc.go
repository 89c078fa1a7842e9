// Package relayfixture holds the relay's test fixtures: outbox rows of the
// neutral test events (relaytest/testevent) written through the real
// outbox.Writer, in-process relays, and checks of what reached a pstest
// server (every event, order per key).
package relayfixture
