// Package projection is the orders service's read model: the
// order_summaries table, kept by a version-guarded upsert from the
// state-carrying OrderEvents. Summaries is a projection.TxHandler that the
// embedded eventrelay projector runs in the transaction that also records
// the event in the inbox; Registry routes the three order event types to
// it with the envelope decoder.
package projection
