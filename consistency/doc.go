// Package consistency gives a service read-your-writes over its
// asynchronous read models.
//
// A write answers with a Token naming what it wrote: the aggregate (type
// and id) and the version the write produced. Its text form (String,
// Parse) is opaque to clients and versioned ("v1").
//
// The projector announces what each read model applied: after every batch
// it sends one NOTIFY on Channel (Announce) carrying the read model's name
// (its inbox consumer) and the highest version per aggregate key of the
// batch. Applied, stale (a newer version is already there) and duplicate
// events all count: in each case the read model holds that version or a
// newer one. A deletion is applied as a tombstone, so a token for a
// delete is satisfied the same way.
//
// A Waiter (one per process) keeps one LISTEN connection and wakes the
// requests waiting on it. Wait checks the read model once through the
// read model's Lookup, then only re-checks when an announcement arrives:
// no request polls the database while it waits. An announcement too large
// for one NOTIFY names only the read model; waiters on it look up again.
// Wait is bounded (WaiterOptions.DefaultWait, capped at MaxWait) and
// returns ErrTimeout when the read model has not caught up, also when the
// caller's deadline (a request timeout as long as MaxWait) comes first:
// the caller decides whether to fail (e.g. 503 with a retryable reason
// such as READ_MODEL_BEHIND) or to answer stale with a marker.
//
// In a Kratos service: a write calls Reply (the token in the
// x-consistency-token response header or gRPC header metadata, TokenHeader),
// a read passes Requested's tokens to Wait, and the read model's lookup
// answers: InboxLookup what the projector recorded for the projection (any
// read model), TableLookup the version column of the read model's own
// table. package embedded runs the Waiter in the app (Options.Waiter), an
// InboxLookup registered for each of its projections.
package consistency
