// Package testevent is a neutral event for tests that need events but no
// service's domain: an "item" aggregate whose payloads are
// google.protobuf.Struct messages, carried in a Struct envelope. Encode is
// an outbox.Encoder and Decode a projection.Decoder for it, so a test
// writes, relays and projects items with the real writer, relay and
// projector (eventrelay's own tests, its benchmark and browser tests do).
// A service tests with its own events and codec.
package testevent
