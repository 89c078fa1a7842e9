// Package events is the orders service's event contract in Go: the names
// of its events and Codec, eventrelay's envelope codec declared over the
// orders payload messages (the outbox writer's Encoder, the projector's
// decoder, the payload of each event type). The conversions between the
// orders table, the Order message and the read-model row are in order.go.
package events
