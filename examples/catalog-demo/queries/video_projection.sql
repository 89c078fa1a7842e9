-- The catalog's Postgres read model. Every write is guarded by the
-- aggregate version ("apply if newer"); a deletion is the same upsert with
-- deleted_at set (a tombstone), so a late stale update cannot resurrect it.

-- UpsertVideoProjection applies the state of a video at a version. It
-- affects 0 rows when the projection already holds that version or a newer
-- one (a stale event).
-- name: UpsertVideoProjection :execrows
INSERT INTO video_projection (video_id, uploader_id, title, description, duration_micros, status, media_status,
                              analysis_status, version, created_at, source_updated_at, deleted_at, last_event_id,
                              occurred_at, projected_at)
VALUES (@video_id, @uploader_id, @title, @description, @duration_micros, @status, @media_status,
        @analysis_status, @version, @created_at, @source_updated_at, @deleted_at, @last_event_id,
        @occurred_at, now())
ON CONFLICT (video_id) DO UPDATE
SET uploader_id       = excluded.uploader_id,
    title             = excluded.title,
    description       = excluded.description,
    duration_micros   = excluded.duration_micros,
    status            = excluded.status,
    media_status      = excluded.media_status,
    analysis_status   = excluded.analysis_status,
    version           = excluded.version,
    created_at        = excluded.created_at,
    source_updated_at = excluded.source_updated_at,
    deleted_at        = excluded.deleted_at,
    last_event_id     = excluded.last_event_id,
    occurred_at       = excluded.occurred_at,
    projected_at      = now()
WHERE video_projection.version < excluded.version;

-- name: GetVideoProjection :one
SELECT * FROM video_projection WHERE video_id = @video_id;

-- ListVideoProjections pages through the live videos of the read model.
-- name: ListVideoProjections :many
SELECT * FROM video_projection
WHERE deleted_at IS NULL AND video_id > @after_id
ORDER BY video_id
LIMIT @page_size;

-- VideoProjectionVersion is the version the read model holds of a video
-- (a tombstone's included), 0 when it holds none.
-- name: VideoProjectionVersion :one
SELECT coalesce(max(version), 0)::bigint AS version FROM video_projection WHERE video_id = @video_id;
