// Package elastic is eventrelay's Elasticsearch read model: a search
// projection declared as simply as a Postgres one, the adapter it writes
// through and its side of relayctl, built on the official client
// (github.com/elastic/go-elasticsearch/v8).
//
// # Declaring a search projection
//
// A DocFunc returns the document an event leaves in the index (or a
// Tombstone); HandleAll registers it for every event type of the
// service's envelope codec, and the registry goes into a
// projector.Projection's Batch:
//
//	idx := elastic.Index{Alias: "orders", Body: mapping} // create-index body, strict mapping
//	reg, err := elastic.HandleAll(events.Codec, client, idx, orderDocument)
//	p.Register(projector.Projection{Name: "order-search", Subscription: ..., DeadLetterTopic: ..., Batch: reg})
//
// A service that embeds eventrelay (package embedded) declares the whole
// read model once instead, an embedded.ReadModel: ReadModel names the
// projection, the index, the documents (Handlers), its side of relayctl
// (Admin) and a switch of the read path; embedded.New opens it from
// ELASTIC_URL (without it the service runs without the read model),
// registers the projection and its token lookup, and the service's read
// path finds the client with ReadModel.In.
//
// The engine (Handler) ensures the index and the alias from the mapping,
// writes each batch in one bulk request with version_type=external at the
// aggregate version, and reports a 409 as projection.Stale.
//
// # Errors
//
// Every failure is classified at the edge with eventrelay's error classes
// (the reasons of projection.Classify): 429 is rate_limited; 502/503,
// refused connections and a missing index are unavailable; 504 and
// deadlines are timeout; other 5xx are server_error (all transient: the
// batch is redelivered); 401 and 403 are permission_denied, which the
// projector holds ("blocked/<projection>" in readiness) until the
// credential or grant is fixed, never dead-lettering for it; a 400 item
// (mapping or document parsing) is mapping_error, dead-lettered with its
// reason. The official client's own retries are off: the caller retries
// (the projector nacks, Pub/Sub redelivers).
//
// # Rebuild and verify
//
// Admin is the read model's side of relayctl (package relayctl/hook):
// `relayctl rebuild --reindex` fills a new index from Admin.Documents and
// swaps the alias (Client.Reindex); `relayctl verify` compares the index
// with Admin.Versions, the source of truth the service names.
//
// # Versions
//
// Every write is an index operation with version_type=external and version
// = the aggregate version. Elasticsearch applies it only if the version is
// greater than the stored one; otherwise the item answers 409, reported as
// ItemResult.Stale: a newer or equal state is already there, which for an
// idempotent projection is success. Duplicates, redeliveries and reordering
// therefore converge to the newest version.
//
// # Deletions are tombstones
//
// Projections never issue Elasticsearch deletes for aggregates. A deletion
// is indexed as a tombstone document ("deleted": true, "deleted_at", see
// Tombstone) at the deletion's version, with the same external versioning;
// searches hide tombstones (LiveFilter).
//
// The reason: Elasticsearch remembers the version of a real delete only for
// index.gc_deletes (default 60s). After that the document is simply gone,
// and a late, stale index operation (say v3 arriving after the v4 delete,
// by redelivery or replay) finds no version to lose against and resurrects
// the document. A tombstone is an ordinary document: its version never
// expires, so the stale v3 gets a 409 forever. The contract suite shows
// both behaviours against the test server (TestRealDeleteResurrects,
// TestTombstoneBlocksStaleUpdate). Tombstones cost one small document per
// deleted aggregate; purge them by reindexing without them if that matters.
//
// # Indices and aliases
//
// Projections write through an alias. EnsureIndex creates
// "<alias>-000001" with an explicit mapping and the alias; BulkIndex sends
// require_alias=true so a missing alias fails (unavailable) instead of
// Elasticsearch auto-creating an index with guessed mappings. Reindex
// builds "<alias>-<timestamp>", fills it and swaps the alias atomically.
//
// # Testing
//
// Package elastictest is the test server of the public test kit: a
// service's tests run its search projection, queries, reindex and verify
// without Elasticsearch (with relaytest's Postgres and Pub/Sub double for
// the pipeline). The contract suite in this package holds it to
// Elasticsearch's documented behaviour, and runs against a real cluster as
// well when ELASTIC_URL is set (unique index names, cleaned up
// afterwards).
package elastic
