// Package projector is the embeddable projector: a service registers its
// projections — each a Pub/Sub subscription, an inbox consumer, a
// projection.Registry of event types and handlers, and a dead-letter
// topic — and runs them in its own process, as a Kratos transport.Server
// (Start/Stop) or with Run(ctx). eventrelay ships no projector daemon: a
// service runs its projections embedded (package embedded) or builds its
// own projector binary from embedded.Main in a few lines (docs/adopting.md).
//
//	p, err := projector.New(pool, client, projector.Options{Registerer: reg, Health: h})
//	err = p.Register(projector.Projection{Name: "orders", Subscription: "orders.projection",
//		DeadLetterTopic: "orders.events.dlq", Tx: registry, Tables: []string{"order_view"}})
//	app := kratos.New(kratos.Server(httpSrv, p))
//
// Contract, per projection:
//
//   - Postgres read models (Tx, TxBatch): an event is applied in the transaction
//     that inserts its inbox row (consumer, event_id) into inbox_events of
//     Options.Schema; an event the consumer already recorded is a
//     duplicate, acked without reaching the handler. Handlers must guard
//     every write by the aggregate version (apply only if newer).
//   - Non-transactional read models (Batch): the handler must be idempotent and
//     version-guarded on its own (e.g. external versioning); the inbox row
//     is recorded after the read model accepted the event, so a redelivery the
//     inbox already knows is skipped, and one it does not is harmless.
//   - A message is acked only once its outcome is durable: applied, stale
//     or duplicate (committed), or dead-lettered (published to
//     DeadLetterTopic with error_reason and error). Every other failure is
//     nacked and redelivered after a backoff that grows while failures
//     continue. Permanent vs transient is Projection.Classify's call
//     (projection.Permanent, projection.Retry and the Postgres error
//     classes by default).
//   - Undecodable bodies, missing attributes, unknown event types and
//     unsupported schema versions are dead-lettered with their reason
//     (payload_invalid, attributes_missing, event_type_unknown,
//     schema_unsupported), never retried in a loop.
//   - Within a batch each message succeeds or fails on its own. Events
//     are grouped by their route's projection.Route.HandlerID: one handler
//     registered for several event types gets them in one call; two
//     handlers never share a call, even two closures of one literal.
//   - Stop (or the end of Run's context) stops receiving, finishes the
//     batches in flight and acks or nacks every held message before it
//     returns; nothing is lost by a restart.
//   - One failing subscription (missing, broken stream) is retried with
//     backoff and reported by its readiness check, without stopping the
//     other projections.
//   - Inbox rows older than Projection.InboxRetention are deleted in
//     bounded batches (default: kept forever); a replay of an older event
//     then meets the handlers' version guard instead of the inbox.
//
// Tracing: each delivery runs in a consumer span "process <projection>",
// child of the trace context in the message's traceparent attribute (the
// publisher's producer span), with the event's identity, its outcome and
// any error or dead letter; under it an "apply <projection>" span covers
// the read model's work on the message's batch. With the no-op provider
// (no exporter configured) neither is recorded.
//
// Testing: Deliver gives messages to a registered projection without its
// subscription, on the same path as received ones (inbox, batching,
// dead letters), and reports how each was settled; Stats reads a
// projection's counters without scraping /metrics. DescribeMetrics lists
// the projector_* series for tools.
//
// The projector needs eventrelay's inbox_events table in Options.Schema
// (see the migrations package) and reaches it through the pool's
// search_path. It imports no domain: the event types, their decoding and
// the read models are the service's, registered in a projection.Registry.
package projector
