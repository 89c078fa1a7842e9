-- Read-only queries of the end-to-end harness (make demo, make e2e): progress,
-- latency and the loss check, straight from the tables the daemons write.

-- OutboxProgress: the publisher side at a glance (one scan; the harness
-- calls it about twice a second on tables of tens of thousands of rows).
-- name: OutboxProgress :one
SELECT
    count(*) FILTER (WHERE origin = 'write')::bigint                        AS produced,
    count(*)::bigint                                                        AS total,
    count(*) FILTER (WHERE status = 'published')::bigint                    AS published,
    count(*) FILTER (WHERE status IN ('pending', 'publishing'))::bigint     AS lag,
    -- in flight: claimed rows stay pending, with the claim's lock_token
    count(*) FILTER (WHERE status = 'pending' AND lock_token IS NOT NULL)::bigint AS publishing,
    count(*) FILTER (WHERE status = 'failed')::bigint                       AS failed,
    coalesce(sum(replay_count), 0)::bigint                                  AS replays,
    coalesce(extract(epoch FROM now() - min(created_at)
        FILTER (WHERE status IN ('pending', 'publishing'))), 0)::float8    AS oldest_age_seconds
FROM outbox_events;

-- InboxProgress: events applied per consumer (one inbox row per consumer
-- and event).
-- name: InboxProgress :many
SELECT consumer, count(*)::bigint AS applied
FROM inbox_events
WHERE processed_at IS NOT NULL
GROUP BY consumer
ORDER BY consumer;

-- SourceTotals: the source of truth. Every write is one version, so the
-- sum of versions is the number of business events that must exist.
-- name: SourceTotals :one
SELECT
    count(*)::bigint                                       AS aggregates,
    coalesce(sum(version), 0)::bigint                      AS versions,
    count(*) FILTER (WHERE deleted_at IS NOT NULL)::bigint AS deleted
FROM videos;

-- CommitToProjected: latency percentiles in milliseconds from the outbox
-- insert (the writing transaction, ~commit) to the consumer's inbox row.
-- name: CommitToProjected :one
SELECT
    count(*)::bigint AS events,
    coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0)::float8  AS p50_ms,
    coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0)::float8 AS p99_ms,
    coalesce(max(ms), 0)::float8                                          AS max_ms
FROM (
    SELECT extract(epoch FROM i.processed_at - o.created_at) * 1000 AS ms
    FROM inbox_events i
    JOIN outbox_events o ON o.event_id = i.event_id
    WHERE i.consumer = @consumer AND i.processed_at IS NOT NULL
) AS t;

-- UnappliedEvents: committed events the consumer has no inbox row for
-- (the loss check once the system has settled).
-- name: UnappliedEvents :many
SELECT o.event_id, o.aggregate_id, o.aggregate_version, o.status, o.origin, o.published_at
FROM outbox_events o
WHERE NOT EXISTS (
    SELECT 1 FROM inbox_events i WHERE i.consumer = @consumer AND i.event_id = o.event_id
)
ORDER BY o.id
LIMIT @max_rows;

-- CountUnapplied: how many committed events the consumer has no inbox row
-- for.
-- name: CountUnapplied :one
SELECT count(*)::bigint
FROM outbox_events o
WHERE NOT EXISTS (
    SELECT 1 FROM inbox_events i WHERE i.consumer = @consumer AND i.event_id = o.event_id
);

-- CountPublishedUnapplied: published events the consumer has not applied
-- (0 means nothing is left in flight in Pub/Sub for it, as far as the
-- outbox knows).
-- name: CountPublishedUnapplied :one
SELECT count(*)::bigint
FROM outbox_events o
WHERE o.status = 'published' AND NOT EXISTS (
    SELECT 1 FROM inbox_events i WHERE i.consumer = @consumer AND i.event_id = o.event_id
);

-- OldPublishedEvents: a random sample of published business events that
-- are older than their aggregate's current version (re-driving them must
-- change nothing: the version guard skips them).
-- name: OldPublishedEvents :many
SELECT o.event_id
FROM outbox_events o
JOIN videos v ON v.id::text = o.aggregate_id
WHERE o.status = 'published' AND o.origin = 'write' AND o.aggregate_version < v.version
ORDER BY random()
LIMIT @max_rows;

-- ForgetInboxEvents deletes the inbox rows of the given events for every
-- consumer, as inbox retention does for old rows. A later redelivery of
-- such an event is then stopped only by the read model's version guard,
-- which is what the fault suite's stale re-drive checks.
-- name: ForgetInboxEvents :execrows
DELETE FROM inbox_events WHERE event_id = ANY(@event_ids::uuid[]);

-- PublishingEvents: rows a publisher holds (pending with its claim's
-- lock_token), oldest first, with their claim's lease (what a stalled
-- drain is waiting for).
-- name: PublishingEvents :many
SELECT e.id, e.aggregate_id, e.aggregate_version, e.locked_by, c.lease_until, e.attempts
FROM outbox_events e
LEFT JOIN outbox_claims c ON c.lock_token = e.lock_token
WHERE e.status = 'pending' AND e.lock_token IS NOT NULL
ORDER BY e.id
LIMIT @max_rows;

-- PublishedEnvelopes: published events as the publisher sent them (the
-- fault suite re-sends them padded to near Pub/Sub's size limit).
-- name: PublishedEnvelopes :many
SELECT event_id, event_type, aggregate_type, aggregate_id, aggregate_version, schema_version, ordering_key, payload
FROM outbox_events
WHERE status = 'published'
ORDER BY id
LIMIT @max_rows;
