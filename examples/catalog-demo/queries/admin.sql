-- Queries of the admin CLI (relayctl rebuild, relayctl verify) on the
-- catalog's source of truth and its Postgres read model.

-- ListVideosForRestatement pages through videos (deleted ones included) for
-- rebuild, optionally only the given ids. FOR SHARE holds off writers of the
-- page until the restatements are committed, so each restatement carries
-- the row's current version.
-- name: ListVideosForRestatement :many
SELECT * FROM videos
WHERE id > @after_id
  AND (cardinality(@ids::uuid[]) = 0 OR id = ANY(@ids::uuid[]))
ORDER BY id
LIMIT @page_size
FOR SHARE;

-- name: CountVideos :one
SELECT count(*)::bigint AS total,
       count(*) FILTER (WHERE deleted_at IS NOT NULL)::bigint AS deleted
FROM videos
WHERE cardinality(@ids::uuid[]) = 0 OR id = ANY(@ids::uuid[]);

-- name: CountVideoProjection :one
SELECT count(*)::bigint AS total,
       count(*) FILTER (WHERE deleted_at IS NOT NULL)::bigint AS deleted
FROM video_projection;

-- VerifyVideoProjection compares videos with video_projection and returns
-- up to @samples rows per kind of drift, each with the total of its kind:
--   missing               live video, no projection row
--   missing_tombstone     deleted video, no projection row (a late stale
--                         update could then create one)
--   extra                 projection row without a video
--   stale                 projection version older than the video's
--   ahead                 projection version newer than the video's
--   resurrected           video deleted, projection row live
--   deleted_in_projection video live, projection row a tombstone
--   diverged              same version, different state (edited by hand?)
-- name: VerifyVideoProjection :many
WITH cmp AS (
    SELECT coalesce(v.id, p.video_id)::uuid AS id,
           coalesce(v.version, 0)::bigint AS source_version,
           coalesce(p.version, 0)::bigint AS projection_version,
           CASE
               WHEN p.video_id IS NULL AND v.deleted_at IS NULL THEN 'missing'
               WHEN p.video_id IS NULL THEN 'missing_tombstone'
               WHEN v.id IS NULL THEN 'extra'
               WHEN p.version < v.version THEN 'stale'
               WHEN p.version > v.version THEN 'ahead'
               WHEN v.deleted_at IS NOT NULL AND p.deleted_at IS NULL THEN 'resurrected'
               WHEN v.deleted_at IS NULL AND p.deleted_at IS NOT NULL THEN 'deleted_in_projection'
               WHEN (v.uploader_id, v.title, v.description, v.duration_micros, v.status, v.media_status,
                     v.analysis_status, v.created_at, v.updated_at, v.deleted_at)
                    IS DISTINCT FROM
                    (p.uploader_id, p.title, p.description, p.duration_micros, p.status, p.media_status,
                     p.analysis_status, p.created_at, p.source_updated_at, p.deleted_at) THEN 'diverged'
           END AS kind
    FROM videos v
    FULL OUTER JOIN video_projection p ON p.video_id = v.id
), drift AS (
    SELECT id, kind, source_version, projection_version,
           row_number() OVER (PARTITION BY kind ORDER BY id) AS rn,
           count(*) OVER (PARTITION BY kind) AS kind_total
    FROM cmp
    WHERE kind IS NOT NULL
)
SELECT id, kind::text AS kind, source_version, projection_version, kind_total::bigint AS kind_total
FROM drift
WHERE rn <= @samples::bigint
ORDER BY kind, id;

-- VideoVersions pages through (id, version, deleted) of every video, for
-- comparing with Elasticsearch.
-- name: VideoVersions :many
SELECT id, version, (deleted_at IS NOT NULL)::boolean AS deleted
FROM videos
WHERE id > @after_id
ORDER BY id
LIMIT @page_size;

-- ListVideoProjection pages through the read model (tombstones included),
-- for relayctl rebuild --reindex.
-- name: ListVideoProjection :many
SELECT * FROM video_projection
WHERE video_id > @after_id
ORDER BY video_id
LIMIT @page_size;
