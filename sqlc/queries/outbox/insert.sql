-- InsertOutboxEvents appends several events in one statement: element i of
-- every array is event i (set-returning functions in one select list run
-- in lockstep). Rows are inserted in input order, so ids ascend by input
-- position; the caller matches the returned rows by event_id and checks
-- that order. With notify it also calls outbox_notify (once, not per row).
-- name: InsertOutboxEvents :many
WITH inserted AS (
INSERT INTO outbox_events (
    event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
    schema_version, ordering_key, topic, headers, payload, occurred_at, origin
)
SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.aggregate_version, e.event_type,
       e.schema_version, e.ordering_key, e.topic, e.headers, e.payload, e.occurred_at, e.origin
FROM (
    SELECT generate_subscripts(@event_ids::uuid[], 1) AS position,
           unnest(@event_ids::uuid[]) AS event_id,
           unnest(@aggregate_types::text[]) AS aggregate_type,
           unnest(@aggregate_ids::text[]) AS aggregate_id,
           unnest(@aggregate_versions::bigint[]) AS aggregate_version,
           unnest(@event_types::text[]) AS event_type,
           unnest(@schema_versions::integer[]) AS schema_version,
           unnest(@ordering_keys::text[]) AS ordering_key,
           unnest(@topics::text[]) AS topic,
           unnest(@headers::jsonb[]) AS headers,
           unnest(@payloads::bytea[]) AS payload,
           unnest(@occurred_ats::timestamptz[]) AS occurred_at,
           unnest(@origins::text[]) AS origin
) AS e
ORDER BY e.position
RETURNING id, event_id, created_at
)
SELECT id, event_id, created_at,
       ((SELECT outbox_notify(@notify_channel::text, false) WHERE @notify::boolean) IS TRUE)::boolean AS notified
FROM inserted;

-- InsertOutboxEvent appends one event; with notify it also calls
-- outbox_notify, in the same statement.
-- name: InsertOutboxEvent :one
WITH inserted AS (
INSERT INTO outbox_events (
    event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
    schema_version, ordering_key, topic, headers, payload, occurred_at, origin
) VALUES (
    @event_id, @aggregate_type, @aggregate_id, @aggregate_version, @event_type,
    @schema_version, @ordering_key, @topic, @headers, @payload, @occurred_at, @origin
)
RETURNING id, created_at
)
SELECT id, created_at,
       ((SELECT outbox_notify(@notify_channel::text, false) WHERE @notify::boolean) IS TRUE)::boolean AS notified
FROM inserted;

-- NotifyOutbox wakes the publishers of the current schema through
-- outbox_notify (migration 00006: an empty channel is the schema's own;
-- unless always, only when a publisher asked for it).
-- name: NotifyOutbox :exec
SELECT outbox_notify(@channel::text, @always::boolean);
