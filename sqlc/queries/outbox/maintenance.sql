-- Queries of the relay's index upkeep (relay/internal/upkeep,
-- indexes.go). The REINDEX and DROP INDEX statements themselves are
-- not here: they take an identifier, not a value, and cannot run in a
-- transaction block, so they are constants in the data layer (see
-- reindexStatement there).

-- OutboxIndexStats describes each named index of outbox_events: its size
-- on disk now, and, as of its last VACUUM, ANALYZE or build (pg_class),
-- its pages and entries plus an estimate of the pages those entries need.
--
-- The estimate is a freshly built btree: each leaf entry is a 4-byte line
-- pointer plus an 8-byte tuple header and its columns' average widths
-- (pg_stats; 8 bytes when a column has no statistics yet), padded to 8
-- bytes; leaf pages are filled to the index's fillfactor (default 90) of
-- their 8152 usable bytes (block size less page header and btree special
-- space); plus the metapage and a root. It ignores deduplication and
-- NULLs, so it errs high and the bloat it finds is, if anything, larger.
-- relpages and reltuples come from the same moment, so an index that grew
-- since (a wave filling it) is not taken for a bloated one.
-- name: OutboxIndexStats :many
SELECT c.relname::text AS name,
       pg_relation_size(c.oid)::bigint AS bytes,
       c.relpages::bigint AS stats_pages,
       c.reltuples::float8 AS stats_entries,
       (2 + ceil(greatest(c.reltuples, 0) * (4 + 8 * ceil((8 + w.width) / 8.0))
            / (8152 * coalesce(ff.fillfactor, 90) / 100.0)))::bigint AS needed_pages,
       current_setting('block_size')::bigint AS block_size
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
CROSS JOIN LATERAL (
    SELECT sum(coalesce(s.avg_width, 8))::float8 AS width
    FROM unnest(i.indkey::int2[]) AS k(attnum)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    LEFT JOIN pg_catalog.pg_stats s
           ON s.schemaname = current_schema() AND s.tablename = 'outbox_events' AND s.attname = a.attname
) w
LEFT JOIN LATERAL (
    SELECT split_part(o, '=', 2)::int AS fillfactor
    FROM unnest(c.reloptions) AS o
    WHERE o LIKE 'fillfactor=%'
) ff ON true
WHERE i.indrelid = 'outbox_events'::regclass
  AND i.indisvalid
  AND c.relname = ANY(@names::text[])
ORDER BY 1;

-- InvalidOutboxIndexes lists the invalid indexes of outbox_events: what an
-- interrupted REINDEX CONCURRENTLY leaves (<name>_ccnew, or <name>_ccold
-- when it stopped after the swap) or an interrupted CREATE INDEX
-- CONCURRENTLY.
-- name: InvalidOutboxIndexes :many
SELECT c.relname::text AS name
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'outbox_events'::regclass
  AND NOT i.indisvalid
ORDER BY 1;

-- TryLockOutboxMaintenance takes the session-level maintenance lock of
-- this schema's outbox if no other session holds it: one replica rebuilds
-- indexes at a time. Release it with UnlockOutboxMaintenance on the same
-- connection (or by closing it).
-- name: TryLockOutboxMaintenance :one
SELECT pg_try_advisory_lock(hashtextextended('eventrelay.outbox.maintenance.' || current_schema(), 0));

-- name: UnlockOutboxMaintenance :one
SELECT pg_advisory_unlock(hashtextextended('eventrelay.outbox.maintenance.' || current_schema(), 0));

-- OutboxIndexSize is the size on disk of one index of the schema (before
-- and after its rebuild).
-- name: OutboxIndexSize :one
SELECT pg_relation_size(CAST(@index_name::text AS regclass))::bigint;
