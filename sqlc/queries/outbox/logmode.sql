-- Queries of the log-based relay (relay.ModeLog): its slot, its published
-- horizon (outbox_log_slots) and the outbox rows it reads from the table
-- (a slot's recovery, a replay or release the stream carried). None
-- writes to an outbox row except FailLogOutboxEvent, for an event's own
-- fault. A 32-bit transaction id is what a row's xmin holds; LSNs travel
-- as text.

-- OutboxLogSlot is what Postgres says of a slot, with the relay's record
-- of it and the database asking (slot names are cluster-wide); '' for
-- what the slot has not (a NULL).
-- name: OutboxLogSlot :one
SELECT coalesce(s.wal_status, '')::text AS wal_status,
       coalesce(s.confirmed_flush_lsn::text, '')::text AS confirmed_lsn,
       coalesce(l.recovering, false)::boolean AS recovering,
       coalesce(s.database::text, '')::text AS database,
       coalesce(s.plugin::text, '')::text AS plugin,
       current_database()::text AS here
FROM pg_catalog.pg_replication_slots s
LEFT JOIN outbox_log_slots l ON l.slot_name = s.slot_name
WHERE s.slot_name = @slot_name::text;

-- name: DropOutboxLogSlot :exec
SELECT pg_drop_replication_slot(@slot_name::text);

-- OutboxLogLag is how far the slot's confirmed position is behind the
-- WAL in bytes (0 without the slot), and max_slot_wal_keep_size in bytes
-- (-1: unlimited).
-- name: OutboxLogLag :one
SELECT coalesce((SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::bigint
                 FROM pg_catalog.pg_replication_slots s WHERE s.slot_name = @slot_name::text), 0)::bigint AS lag_bytes,
       (SELECT CASE WHEN setting::bigint < 0 THEN -1 ELSE setting::bigint * 1024 * 1024 END
        FROM pg_catalog.pg_settings WHERE name = 'max_slot_wal_keep_size')::bigint AS keep_bytes;

-- ProbeOutboxLogHorizon reads the oldest transaction running in the
-- statement's snapshot and the WAL insert position after it: once the
-- slot is confirmed past that position, every row inserted by an older
-- transaction is done.
-- name: ProbeOutboxLogHorizon :one
SELECT (pg_snapshot_xmin(pg_current_snapshot())::text::bigint % 4294967296)::bigint AS xmin,
       pg_current_wal_insert_lsn()::text AS at;

-- BeginOutboxLogRecovery records, before a slot is created, that its
-- recovery has not finished.
-- name: BeginOutboxLogRecovery :exec
INSERT INTO outbox_log_slots (slot_name, recovering) VALUES (@slot_name::text, true)
ON CONFLICT (slot_name) DO UPDATE SET recovering = true, updated_at = now();

-- SaveOutboxLogPublished records the slot's published horizon and
-- confirmed position, in place; a recovery is over.
-- name: SaveOutboxLogPublished :exec
INSERT INTO outbox_log_slots (slot_name, published_xmin, confirmed_lsn)
VALUES (@slot_name::text, @published_xmin::bigint, CAST(@confirmed_lsn::text AS pg_lsn))
ON CONFLICT (slot_name) DO UPDATE SET published_xmin = excluded.published_xmin,
    confirmed_lsn = excluded.confirmed_lsn, recovering = false, updated_at = now();

-- OutboxLogPublishedXmin is the slot's recorded horizon (NULL before the
-- first recovery ended).
-- name: OutboxLogPublishedXmin :one
SELECT published_xmin FROM outbox_log_slots WHERE slot_name = @slot_name::text;

-- FailLogOutboxEvent ends a pending row that failed for its own fault, as
-- the polling relay's mark does (MarkOutboxFailed): status failed,
-- error_reason, error_history.
-- name: FailLogOutboxEvent :execrows
UPDATE outbox_events o
SET status = 'failed', failed_at = now(),
    attempts = o.attempts + CASE WHEN @attempted::boolean THEN 1 ELSE 0 END,
    last_error = @error::text, error_reason = @reason::text,
    error_history = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
        || jsonb_build_array(jsonb_build_object('at', now(), 'reason', @cause::text, 'error', @error::text,
               'attempt', o.attempts + CASE WHEN @attempted::boolean THEN 1 ELSE 0 END, 'worker', @worker_id::text))
WHERE o.id = @id AND o.status = 'pending';

-- OutboxHeldKeys are the keys with a failed row: their later rows wait.
-- name: OutboxHeldKeys :many
SELECT DISTINCT topic, ordering_key FROM outbox_events WHERE status = 'failed';

-- OutboxKeyHeld reports whether a failed row of the key remains.
-- name: OutboxKeyHeld :one
SELECT EXISTS (SELECT 1 FROM outbox_events WHERE status = 'failed' AND topic = @topic::text AND ordering_key = @ordering_key::text)::boolean AS held;

-- PendingOutboxEvent reads a row if it is pending.
-- name: PendingOutboxEvent :many
SELECT sqlc.embed(o) FROM outbox_events o WHERE o.id = @id AND o.status = 'pending';

-- ReleasedOutboxEvents are the pending rows of a key from an id on that
-- no failed row of the key precedes, in id order: what a replay or
-- resolution of the key's failed row released.
-- name: ReleasedOutboxEvents :many
SELECT sqlc.embed(o)
FROM outbox_events o
WHERE o.topic = @topic::text AND o.ordering_key = @ordering_key::text AND o.status = 'pending' AND o.id >= @from_id::bigint
  AND NOT EXISTS (SELECT 1 FROM outbox_events f
                  WHERE f.status = 'failed' AND f.topic = o.topic AND f.ordering_key = o.ordering_key AND f.id < o.id)
ORDER BY o.id
LIMIT @row_limit;

-- UnpublishedOutboxEvents are the rows a new slot's recovery republishes
-- (run in the snapshot the slot exported): pending rows inserted at or
-- after the slot's recorded horizon (every pending row without one) or
-- behind a row of their key replayed or resolved at or after it (which
-- released them), not behind a failed row of their key, in id order. A
-- row's xmin has no index: the scan reads the whole table (slot loss is
-- rare).
-- name: UnpublishedOutboxEvents :many
SELECT sqlc.embed(o)
FROM outbox_events o
WHERE o.status = 'pending' AND o.id > @after_id::bigint
  AND (sqlc.narg(since)::bigint IS NULL OR age(o.xmin) <= age(sqlc.narg(since)::bigint::text::xid)
       OR EXISTS (SELECT 1 FROM outbox_events b
                  WHERE b.topic = o.topic AND b.ordering_key = o.ordering_key AND b.id < o.id
                    AND (b.status = 'resolved' OR b.replay_count > 0)
                    AND age(b.xmin) <= age(sqlc.narg(since)::bigint::text::xid)))
  AND NOT EXISTS (SELECT 1 FROM outbox_events f
                  WHERE f.status = 'failed' AND f.topic = o.topic AND f.ordering_key = o.ordering_key AND f.id < o.id)
ORDER BY o.id
LIMIT @row_limit;

-- DeleteUnchangedOutboxRows deletes the rows of ids still in the status
-- and replay count they were selected with (SelectOutboxRows: a replay
-- since bumped replay_count, a failure changed the status), skipping a
-- row another transaction holds.
-- name: DeleteUnchangedOutboxRows :execrows
DELETE FROM outbox_events
WHERE id IN (
    SELECT o.id
    FROM outbox_events o
    JOIN (SELECT unnest(@ids::bigint[]) AS id, unnest(@statuses::text[]) AS status,
                 unnest(@replay_counts::int[]) AS replay_count) AS s ON s.id = o.id
    WHERE o.status = s.status AND o.replay_count = s.replay_count
    FOR UPDATE OF o SKIP LOCKED);

-- TryLockOutboxLogReader takes the slot's reader lock, a session
-- advisory lock, without waiting; the keepalives end the session (and the
-- lock) within about 11s of the reader's host vanishing, not after the
-- system's 2 hours.
-- name: TryLockOutboxLogReader :one
SELECT pg_try_advisory_lock(@lock_key::bigint)::boolean AS locked,
       set_config('tcp_keepalives_idle', '5', false)::text AS keepalives_idle,
       set_config('tcp_keepalives_interval', '2', false)::text AS keepalives_interval,
       set_config('tcp_keepalives_count', '3', false)::text AS keepalives_count;

-- OutboxPublicationUpdates reports whether the publication publishes
-- updates (no row: it does not exist).
-- name: OutboxPublicationUpdates :one
SELECT pubupdate FROM pg_catalog.pg_publication WHERE pubname = @publication::text;
