// Package projection is the orders service's read model: the
// order_summaries table, kept by a version-guarded upsert from the
// state-carrying order events. Register registers it on eventrelay's
// projector, one typed handler per order event type (envelope.Handle), run
// in the transaction that also records the event in the inbox.
package projection
