// Package events is the orders service's event contract in Go: the names
// of its events, the outbox.Encoder that wraps a payload in the
// orders.v1.OrderEvent envelope, and the Decode that reads it back (used
// by the projection's decoder and by rebuild/verify tooling).
package events
