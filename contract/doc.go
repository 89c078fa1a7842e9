// Package contract is the message contract between the producer (the
// relay, which publishes outbox rows to Pub/Sub) and the consumers
// (projections), beside the body (package envelope): the message
// attributes that repeat an event's identity outside the body and how each
// value is encoded, the attributes a dead letter adds, and the Pub/Sub
// limits a message and a topic ID must keep. Neither side owns it; both
// build and read attributes through it, so a change here is a change of
// the contract.
//
// Every message the relay publishes carries, on top of the row's headers
// (which cannot override them):
//
//	event_id        the event's UUID (canonical text form, never the nil UUID)
//	event_type      the event type, e.g. "orders.order.placed"
//	aggregate_type  the aggregate's type (may be empty)
//	aggregate_id    the aggregate's id
//	version         the aggregate version, decimal, >= 1
//	schema_version  the payload's schema version, decimal, >= 1
//	occurred_at     the producing commit, RFC 3339 with nanoseconds, UTC
//
// A W3C traceparent attribute, when present, carries the producer's trace
// context. The body is the serialized envelope; routing and triage never
// need it.
package contract
