-- outbox_notify: the writers' conditional NOTIFY in one function, so a
-- write transaction sends its outbox rows and its wake-up in one statement
-- (one round trip) and every caller derives the channel the same way.
--
-- It notifies the channel, or the schema's own when channel is empty
-- ('eventrelay_outbox_' || current_schema(), or || md5(current_schema())
-- past 63 bytes; outbox.NotifyChannelFor derives the same in Go), when
-- always is set, when no publisher keeps a row in outbox_wakeups (older
-- and polling publishers) or when one is armed (idle). A busy publisher
-- claims again after its fetch cooldown by itself, and a skipped NOTIFY
-- spares the commit the database-wide lock it takes until the commit is
-- flushed. It returns whether it notified. search_path is fixed to the
-- schema the migration runs in: the function reads that schema's
-- outbox_wakeups and names that schema's channel whatever the caller's
-- search_path.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION outbox_notify(channel text, always boolean) RETURNS boolean
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

-- +goose Down
DROP FUNCTION IF EXISTS outbox_notify(text, boolean);
