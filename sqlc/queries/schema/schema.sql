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

-- UnusableRelations returns which of the named tables of the schema the
-- current role can neither read nor write (no SELECT, INSERT, UPDATE or
-- DELETE, or no USAGE on the schema): the database is migrated but the
-- role was not granted (readiness tells that apart from a missing table).
-- name: UnusableRelations :many
SELECT c.relname::text AS name
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = @schema_name::text
  AND c.relname = ANY(@names::text[])
  AND NOT (has_schema_privilege(n.oid, 'USAGE')
           AND has_table_privilege(c.oid, 'SELECT, INSERT, UPDATE, DELETE'))
ORDER BY 1;
