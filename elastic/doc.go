// Package elastic is the catalog's Elasticsearch adapter (the store of its
// search read model), built on the official client
// (github.com/elastic/go-elasticsearch/v8). It offers what projections,
// verify and rebuild need — EnsureIndex, BulkIndex with
// external versions, Get, Scan, Reindex, DeleteIndex, Refresh, Ping — and
// translates every failure into an errclass reason at the edge: 429 is
// rate_limited; 502/503, refused connections and a missing index are
// unavailable; 504 and deadlines are timeout; other 5xx are server_error
// (all transient); a 400 item (mapping or document parsing) is
// mapping_error, which the projector dead-letters. The official client's
// own retries are off: the caller retries (the projector nacks, Pub/Sub
// redelivers).
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
// The contract suite in this package runs against the in-repo test server
// (internal/catalog/elastic/estest) and, when ELASTIC_URL is set, against that real
// cluster as well (unique index names, cleaned up afterwards).
package elastic
