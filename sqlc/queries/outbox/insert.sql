-- InsertOutboxEvents appends several events in one statement: element i of
-- every array is event i (set-returning functions in one select list run
-- in lockstep). Rows are inserted in input order, so ids ascend by input
-- position; the caller matches the returned rows by event_id and checks
-- that order.
-- name: InsertOutboxEvents :many
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
RETURNING id, event_id, created_at;

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
