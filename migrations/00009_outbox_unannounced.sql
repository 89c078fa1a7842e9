-- Unannounced writers: no commit is left without a wake-up.
--
-- outbox_notify decides during the writer's insert, not at its commit. A
-- writer that read every publisher busy skips its NOTIFY and may commit
-- long after: after a publisher's claim came back empty, it armed its row
-- and claimed once more. Nothing would wake that publisher for the
-- writer's rows but its next poll.
--
-- Such a writer is unannounced: before it decides to skip, it takes a
-- shared advisory lock of the schema's outbox_wakeups, held until its
-- transaction ends, and it decides on a read made after taking it (READ
-- COMMITTED takes a snapshot per statement). outbox_unannounced tries that
-- lock exclusively without waiting (writers never queue behind it) and
-- reports whether an unannounced writer is in flight. A publisher that
-- armed its row claims once more only after outbox_unannounced returned
-- false: every writer that read its row busy has then committed or rolled
-- back (a lock is released after the commit is visible), and every later
-- writer reads the armed row and notifies.
--
-- A transaction at REPEATABLE READ or SERIALIZABLE reads the snapshot it
-- took at its first statement, before the lock, so it notifies whenever
-- it writes. A writer that reads a publisher armed notifies without the
-- lock, as before.

-- +goose Up
-- +goose StatementBegin
-- The key of the lock, derived from the schema: called only by the two
-- functions below, whose search_path is the migration's (no SET clause
-- here, so the call is inlined).
CREATE FUNCTION outbox_unannounced_lock() RETURNS bigint
    LANGUAGE sql STABLE
AS $$
    SELECT ('x' || left(md5('eventrelay unannounced ' || current_schema()), 16))::bit(64)::bigint
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION outbox_unannounced() RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    SET search_path FROM CURRENT
AS $$
BEGIN
    IF pg_try_advisory_lock(outbox_unannounced_lock()) THEN
        PERFORM pg_advisory_unlock(outbox_unannounced_lock());
        RETURN false;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_notify(channel text, always boolean) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    SET search_path FROM CURRENT
AS $$
BEGIN
    IF NOT always
       AND current_setting('transaction_isolation') = 'read committed'
       AND EXISTS (SELECT 1 FROM outbox_wakeups)
       AND NOT EXISTS (SELECT 1 FROM outbox_wakeups WHERE armed_until > now()) THEN
        -- Every publisher is busy: stay unannounced until this transaction
        -- ends, and decide on a read made after the lock.
        PERFORM pg_advisory_xact_lock_shared(outbox_unannounced_lock());
        IF EXISTS (SELECT 1 FROM outbox_wakeups)
           AND NOT EXISTS (SELECT 1 FROM outbox_wakeups WHERE armed_until > now()) THEN
            RETURN false;
        END IF;
    END IF;
    PERFORM pg_notify(
        CASE
            WHEN channel <> '' THEN channel
            WHEN octet_length('eventrelay_outbox_' || current_schema()) <= 63 THEN 'eventrelay_outbox_' || current_schema()
            ELSE 'eventrelay_outbox_' || md5(current_schema())
        END,
        '');
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_notify(channel text, always boolean) RETURNS boolean
    LANGUAGE plpgsql VOLATILE
    SET search_path FROM CURRENT
AS $$
BEGIN
    IF NOT (always
            OR NOT EXISTS (SELECT 1 FROM outbox_wakeups)
            OR EXISTS (SELECT 1 FROM outbox_wakeups WHERE armed_until > now())) THEN
        RETURN false;
    END IF;
    PERFORM pg_notify(
        CASE
            WHEN channel <> '' THEN channel
            WHEN octet_length('eventrelay_outbox_' || current_schema()) <= 63 THEN 'eventrelay_outbox_' || current_schema()
            ELSE 'eventrelay_outbox_' || md5(current_schema())
        END,
        '');
    RETURN true;
END
$$;
-- +goose StatementEnd
DROP FUNCTION IF EXISTS outbox_unannounced();
DROP FUNCTION IF EXISTS outbox_unannounced_lock();
