// Package events is the orders service's event contract in Go: Codec,
// eventrelay's envelope codec declared over the orders payload messages
// with their names, the order aggregate type and its topic (the outbox
// writer's Encoder, a write's outbox event, the projector's decoder, the
// payload of each event type). The conversions between the orders table,
// the Order message and the read-model row are in order.go.
package events
