-- name: GetSetting :one
SELECT value FROM catalog_settings WHERE name = @name;

-- name: SetSetting :exec
INSERT INTO catalog_settings (name, value, updated_by, updated_at)
VALUES (@name, @value, @updated_by, now())
ON CONFLICT (name) DO UPDATE
SET value = excluded.value, updated_by = excluded.updated_by, updated_at = excluded.updated_at;
