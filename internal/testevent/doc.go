// Package testevent is a neutral event envelope for eventrelay's own tests:
// an "item" aggregate whose payloads are google.protobuf.Struct messages,
// carried in a Struct envelope. It exists so that the tests of the generic
// packages exercise the write side, the relay and the projector without any
// service's domain.
package testevent
