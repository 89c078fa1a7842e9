-- The claim's candidate scan must read outbox_events_pending_idx, not the
-- primary key.
--
-- Both return rows in id order. The planner weighs them by the share of
-- rows that statistics call 'pending', and those statistics are whatever
-- the last ANALYZE saw. An ANALYZE that ran while a backlog was building
-- (autovacuum does so after a tenth of the table changed) calls nearly
-- every row pending; the claims then walk the primary key from the first
-- row and filter out every row published since, so each claim of a drain
-- is slower than the one before. Measured in the bench's replicas drain
-- (30,000 rows, claims of 25): 5 to 17 ms per claim on the primary key
-- against about 1 ms on the partial index, and Postgres CPU-bound at two
-- publisher replicas.
--
-- With no statistics on status the planner uses its default selectivity
-- for status = '...' (a small share), under which the partial indexes of
-- every status win, whatever the backlog. The outbox queries read rows of
-- one status through those indexes only, so nothing needs the column's
-- statistics. ANALYZE no longer samples the column, but it keeps
-- statistics gathered before: on a database that already has them, run
-- this migration while the outbox has no backlog (relayctl status), so
-- that the kept ones call pending rows rare.
--
-- SET STATISTICS takes a SHARE UPDATE EXCLUSIVE lock: writers and the
-- publisher keep running.

-- +goose Up
ALTER TABLE outbox_events ALTER COLUMN status SET STATISTICS 0;

-- +goose Down
ALTER TABLE outbox_events ALTER COLUMN status SET STATISTICS -1;
