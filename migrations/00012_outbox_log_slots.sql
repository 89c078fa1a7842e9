-- What the log-based relay (relay.ModeLog) knows to be published, per
-- replication slot, without writing to any outbox row.
--
-- The relay reads committed inserts of outbox_events from a logical
-- replication slot and confirms the slot's position only below what Pub/Sub
-- acknowledged. Once per confirmation (about a second) it also records here
-- a transaction horizon: every outbox row inserted by a transaction older
-- than published_xmin (a 32-bit transaction id, compared with age()) is
-- published, or failed and holding its key. When the slot is lost (dropped,
-- invalidated by max_slot_wal_keep_size, not carried over by a failover)
-- the relay republishes the pending rows inserted at or after that horizon
-- and resumes from a new slot: duplicates, never a loss. recovering is set
-- before a slot is created and cleared once the republished rows are all
-- acknowledged: a slot found while it is set was created by a relay that
-- died during its recovery, and is replaced. published_xmin is NULL before
-- the first recovery (every pending row is then not known to be
-- published). One small row per slot, updated in place. See
-- docs/decisions/0033-log-based-relay.md.

-- +goose Up
CREATE TABLE outbox_log_slots (
    slot_name      text        PRIMARY KEY,
    published_xmin bigint      CHECK (published_xmin >= 0 AND published_xmin < 4294967296),
    confirmed_lsn  pg_lsn,
    recovering     boolean     NOT NULL DEFAULT false,
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox_log_slots;
