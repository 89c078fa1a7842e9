// Package outbox is eventrelay's write side: it appends events to the
// transactional outbox in the caller's pgx transaction, so an event exists
// if and only if the business change it describes commits.
//
// The package depends on pgx and protobuf only (no Kratos, Pub/Sub or
// Elasticsearch), so any service can import it.
//
// Contract:
//
//   - InsertTx writes one outbox_events row per event inside tx. Nothing is
//     visible to publishers before tx commits; a rollback leaves no row.
//   - One call validates and encodes all its events before writing any (an
//     invalid event writes nothing; the error names its index and field),
//     then writes them with one statement (one per 16 MB of payloads).
//     Their ids ascend in the order of the events, the order publishers
//     deliver one ordering key in. Append the events of one transaction
//     with one call: it saves a round trip per event.
//   - Event ids are UUIDv7 (time-ordered) unless the caller sets one.
//   - The ordering key defaults to the aggregate id: publishers deliver the
//     events of one aggregate to Pub/Sub in aggregate_version order.
//   - The topic comes from the Writer's routing (per aggregate type, with a
//     default), unless the event names one.
//   - (aggregate_type, aggregate_id, aggregate_version) is unique: writing the
//     same version twice fails the transaction, which is what a caller that
//     raced on the aggregate wants. Restatements (Event.Restatement, used by
//     rebuild) are exempt: they re-state the current version under a new id.
//   - With Notify on, the commit wakes LISTENing publishers at once; without
//     it they find the rows on their next poll.
package outbox
