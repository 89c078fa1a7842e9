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

-- MissingPrivileges returns, of each (table, privilege) pair given as two
-- parallel arrays, those on existing tables of the schema the current role
-- does not hold (or all of a table's, without USAGE on the schema): the
-- database is migrated but the role was not granted what it uses
-- (readiness tells that apart from a missing table and names each pair).
-- name: MissingPrivileges :many
SELECT w.name::text AS name, (@privileges::text[])[w.i]::text AS privilege
FROM unnest(@names::text[]) WITH ORDINALITY AS w(name, i)
JOIN pg_catalog.pg_class c ON c.relname = w.name
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = @schema_name::text
  AND NOT (has_schema_privilege(n.oid, 'USAGE')
           AND has_table_privilege(c.oid, (@privileges::text[])[w.i]))
ORDER BY 1, 2;
