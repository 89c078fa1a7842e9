-- PresentRelations returns which of the named tables exist in the schema
-- (pg_catalog, so a missing schema or table is an empty answer, not an
-- error). The daemons check their tables at start and on /readyz.
-- name: PresentRelations :many
SELECT c.relname::text AS name
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = @schema_name::text
  AND c.relname = ANY(@names::text[])
ORDER BY 1;
