-- name: InsertOutboxEvent :one
INSERT INTO outbox_events (
    event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
    schema_version, ordering_key, topic, headers, payload, occurred_at, origin
) VALUES (
    @event_id, @aggregate_type, @aggregate_id, @aggregate_version, @event_type,
    @schema_version, @ordering_key, @topic, @headers, @payload, @occurred_at, @origin
)
RETURNING id, created_at;

-- NotifyOutbox wakes publishers (LISTEN eventrelay_outbox). Notifications
-- are delivered on commit and deduplicated within a transaction.
-- name: NotifyOutbox :exec
SELECT pg_notify(@channel::text, @payload::text);
