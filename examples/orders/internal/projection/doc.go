// Package projection is the orders service's read model: the
// order_summaries table, kept by a version-guarded upsert from the
// state-carrying order events. Registry registers one typed handler per
// order event type (envelope.Handle), which the embedded eventrelay
// projector runs in the transaction that also records the event in the
// inbox.
package projection
