-- name: InsertOutboxEvent :one
INSERT INTO outbox_events (
    event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
    schema_version, ordering_key, topic, headers, payload, occurred_at, origin
) VALUES (
    @event_id, @aggregate_type, @aggregate_id, @aggregate_version, @event_type,
    @schema_version, @ordering_key, @topic, @headers, @payload, @occurred_at, @origin
)
RETURNING id, created_at;

-- NotifyOutbox wakes the publishers of the current schema. An empty
-- channel means the schema's own: 'eventrelay_outbox_' || current_schema(),
-- or 'eventrelay_outbox_' || md5(current_schema()) when that exceeds 63
-- bytes (outbox.NotifyChannelFor derives the same in Go). Notifications
-- are delivered on commit and deduplicated within a transaction.
--
-- Unless always is set, it notifies only when a publisher asked for it
-- (an armed row in outbox_wakeups) or when no publisher keeps a row there
-- at all: a busy publisher claims again after its fetch cooldown by itself,
-- and skipping the NOTIFY spares the commit its database-wide lock.
-- name: NotifyOutbox :exec
SELECT pg_notify(
    CASE
        WHEN @channel::text <> '' THEN @channel::text
        WHEN octet_length('eventrelay_outbox_' || current_schema()) <= 63 THEN 'eventrelay_outbox_' || current_schema()
        ELSE 'eventrelay_outbox_' || md5(current_schema())
    END,
    @payload::text)
WHERE @always::boolean
   OR NOT EXISTS (SELECT 1 FROM outbox_wakeups)
   OR EXISTS (SELECT 1 FROM outbox_wakeups WHERE armed_until > now());
