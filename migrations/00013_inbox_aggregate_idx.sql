-- Read-your-writes from the inbox: a consistency token names an aggregate
-- and a version, and the waiter asks the projector's inbox which version a
-- projection's consumer has recorded for that aggregate
-- (consistency.InboxLookup; package embedded registers it for every
-- projection). Without this index the primary key (consumer, event_id)
-- leaves Postgres to read every inbox row of the consumer: about 0.9 s a
-- look-up at 600,000 rows. With it a look-up reads the aggregate's few
-- entries; the projector pays one more index entry per inbox row.
--
-- Built CONCURRENTLY (outside a transaction) so a large inbox keeps taking
-- writes; IF NOT EXISTS makes an interrupted run repeatable (an interrupted
-- CONCURRENTLY build leaves an INVALID index: drop it and run the
-- migration again).

-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbox_events_aggregate_idx
    ON inbox_events (consumer, aggregate_type, aggregate_id, aggregate_version);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS inbox_events_aggregate_idx;
