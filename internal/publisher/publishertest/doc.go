// Package publishertest holds the publisher's test fixtures: outbox rows of
// the reference domain written through the real outbox.Writer, and checks
// of what reached a pstest server (every event, order per key).
package publishertest
