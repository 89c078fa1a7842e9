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

-- name: UpdateVideo :one
UPDATE videos
SET title = @title,
    description = @description,
    duration_micros = @duration_micros,
    status = @status,
    media_status = @media_status,
    analysis_status = @analysis_status,
    version = version + 1,
    updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

-- name: DeleteVideo :one
UPDATE videos
SET deleted_at = now(), version = version + 1, updated_at = now()
WHERE id = @id AND deleted_at IS NULL
RETURNING *;

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
