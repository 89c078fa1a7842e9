// Package projector is the engine behind the public package projector (and
// so of cmd/projector): it receives events from a Pub/Sub subscription
// (StreamingPull with flow control), checks and decodes them through a
// projection.Registry, applies them in batches to a read model — Postgres
// tables written in the transaction that records the inbox row
// (txApplier), or an idempotent non-transactional store such as a search
// index (batchApplier) — and acks, nacks or dead-letters each message by
// the classification of its outcome.
//
// Guarantees, per projection (one subscription, one inbox consumer name):
//
//   - A message is acked only after its outcome is durable: committed with
//     its inbox row (applied, duplicate, stale) or published to the dead-
//     letter topic (deterministic failure). Everything else is nacked and
//     redelivered, after a backoff that grows while failures continue.
//   - Within a batch each message succeeds or fails on its own: a failing
//     message is isolated by a savepoint and does not nack the others.
//   - On Stop, receiving stops, in-flight batches finish and every message
//     is acked or nacked before Stop returns.
//
// Tracing: each delivery runs in a consumer span "process <projection>",
// child of the trace context in the message's traceparent attribute (the
// publisher's producer span), with the event's identity, its outcome and
// any error or dead letter; under it an "apply <projection>" span covers
// the applier's work on the message's batch. With the no-op provider (no
// exporter configured) neither is recorded.
//
// The engine knows nothing about any domain: a service registers handlers
// in a projection.Registry and builds an Engine with NewTxEngine,
// NewTxBatchEngine or NewBatchEngine, and a Receiver (a Kratos
// transport.Server) to feed it. Events reach handlers by the HandlerID of
// their route (projection.Route): the appliers index typed handler tables by
// it and batch by it, so no handler is recovered from an interface{} and
// two distinct handlers never share a call.
package projector
