// Package projection is the public contract between the projector engine
// and the read models a service registers with it. It knows nothing about
// Pub/Sub, Elasticsearch or Kratos: a service implements TxHandler (for a
// Postgres read model written in the transaction that also records the
// inbox row; ExecFunc when the read model is only written, so a batch's
// statements go in one round trip) or BatchHandler (for an idempotent,
// non-transactional read model such as a search index), registers it per
// event type in a Registry together with
// the schema versions it understands and a Decoder, and hands the registry to
// the engine.
//
// Outcomes are classified by error wrapping, as Watermill and River do it:
// return Permanent(reason, err) for a message that can never succeed (it is
// dead-lettered with that reason), Retry(err) for one that may succeed later
// (it is nacked and redelivered). Errors the adapters classified (a
// Postgres or Elasticsearch outage) keep their reason, and unexplained
// errors are retried: an error nobody understood must not destroy a
// message. Classify is that default; a projector.Projection may replace it.
package projection
