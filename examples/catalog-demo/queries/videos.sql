-- name: InsertVideo :one
INSERT INTO videos (id, uploader_id, title, description, duration_micros, status, media_status, analysis_status, version, created_at, updated_at)
VALUES (@id, @uploader_id, @title, @description, @duration_micros, @status, @media_status, @analysis_status, 1, now(), now())
RETURNING *;

-- name: GetVideo :one
SELECT * FROM videos WHERE id = @id;

-- LockVideo takes the row lock that serializes writers of one video, so
-- versions stay contiguous (one outbox row per version).
-- name: LockVideo :one
SELECT * FROM videos WHERE id = @id FOR UPDATE;

-- UpdateVideo writes the new state of a locked, live video. updated_at is
-- clock_timestamp(), not now(): writers of one video queue on its row lock,
-- and the time of the change must grow with the version.
-- name: UpdateVideo :one
UPDATE videos
SET title = @title,
    description = @description,
    duration_micros = @duration_micros,
    status = @status,
    media_status = @media_status,
    analysis_status = @analysis_status,
    version = version + 1,
    updated_at = clock_timestamp()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- DeleteVideo tombstones a locked, live video: deleted_at = updated_at =
-- the time of the change (see UpdateVideo).
-- name: DeleteVideo :one
UPDATE videos AS v
SET deleted_at = c.ts, version = v.version + 1, updated_at = c.ts
FROM (SELECT clock_timestamp() AS ts) AS c
WHERE v.id = @id AND v.deleted_at IS NULL
RETURNING v.*;

-- name: ListVideos :many
SELECT * FROM videos
WHERE deleted_at IS NULL AND id > @after_id
ORDER BY id
LIMIT @page_size;

-- ListAllVideos pages through every video, deleted ones included (rebuild,
-- verify).
-- name: ListAllVideos :many
SELECT * FROM videos
WHERE id > @after_id
ORDER BY id
LIMIT @page_size;
