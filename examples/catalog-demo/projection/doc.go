// Package projection holds the catalog's read models, registered with the
// projector engine through the public projection package:
//
//   - Videos: the Postgres read model video_projection, written in the
//     projector's inbox transaction and guarded by the aggregate version
//     ("apply if newer"). A deletion is a tombstone (deleted_at set, row
//     kept) written by the same guarded upsert, so a late stale update can
//     never resurrect a deleted video.
//   - Search: the Elasticsearch index behind an alias (default "videos"),
//     written with the bulk API and version_type=external at the aggregate
//     version. Deletions are indexed as tombstone documents (deleted: true)
//     at the deletion's version, never as Elasticsearch deletes:
//     Elasticsearch forgets the version of a deleted document after
//     index.gc_deletes (60s by default), after which a late stale update
//     would recreate it; a tombstone document keeps its version forever.
//     Searches must filter deleted documents out (LiveFilter).
//
// Both consume the same events (created, updated, deleted; schema version
// 1), each on its own subscription and inbox consumer, so Elasticsearch
// being down never holds back the Postgres read model.
package projection
