-- Queries of the admin CLI (relayctl). Read-mostly; every mutation here is
-- paired with an audit row written in the same transaction.

-- ServerIdentity is what the migrate guard compares --expect-db and
-- --expect-host against. server_addr is empty over a Unix socket.
-- name: ServerIdentity :one
SELECT current_database()::text AS database,
       coalesce(host(inet_server_addr()), '')::text AS server_addr,
       coalesce(inet_server_port(), 0)::int AS server_port;

-- name: AdminAuditExists :one
SELECT (to_regclass('admin_audit') IS NOT NULL)::boolean AS present;

-- name: InsertAdminAudit :one
INSERT INTO admin_audit (command, requested_by, reason, details)
VALUES (@command, @requested_by, @reason, @details)
RETURNING id, created_at;

-- SetAdminAuditResult completes an audit row written before its command
-- acted: details.outcome becomes "ok" or "failed: <error>", and result (a
-- JSON object, e.g. the counts of what the command did; {} for none) is
-- merged into details.
-- name: SetAdminAuditResult :exec
UPDATE admin_audit
SET details = details || @result::jsonb || jsonb_build_object('outcome', @outcome::text)
WHERE id = @id;

-- name: OutboxStatusCounts :many
SELECT status, count(*)::bigint AS n
FROM outbox_events
GROUP BY status
ORDER BY status;

-- OutboxHealth is `relayctl status`'s view of the unpublished rows: lag
-- (pending, in flight included), rows ready now (due, not in flight, and
-- the head of their key: no earlier row of it pending, in flight or
-- failed), rows held behind a failed head of their key, retries waiting
-- for their backoff, rows in flight (pending with a claim's lock_token;
-- 'publishing', the status the previous claim protocol wrote, counts as
-- in flight too), stuck claims (expired lease or claimed longer than
-- max_processing: the claim's lease row in outbox_claims) and the age of
-- the oldest unpublished row.
-- One pass over the unpublished and failed rows, each compared with the
-- earlier rows of its key by window functions (a lookup per row is
-- quadratic in the backlog).
-- name: OutboxHealth :one
WITH k AS (
    SELECT e.status, e.next_attempt_at, e.created_at,
           e.lock_token IS NOT NULL AND e.status IN ('pending', 'publishing') AS inflight,
           e.lock_token IS NOT NULL AND e.status IN ('pending', 'publishing')
               AND (coalesce(c.lease_until, e.lease_until) < now()
                    OR coalesce(c.claimed_at, e.claimed_at) < now() - make_interval(secs => @max_processing_seconds::float8)
                    OR (c.lock_token IS NULL AND e.lease_until IS NULL)) AS stuck,
           row_number() OVER w = 1 AS head,
           coalesce(bool_or(e.status = 'failed') OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS failed_before
    FROM outbox_events e
    LEFT JOIN outbox_claims c ON c.lock_token = e.lock_token
    WHERE e.status IN ('pending', 'publishing', 'failed')
    WINDOW w AS (PARTITION BY e.topic, e.ordering_key ORDER BY e.id)
)
SELECT count(*) FILTER (WHERE status IN ('pending', 'publishing'))::bigint AS lag,
       count(*) FILTER (WHERE status = 'pending' AND NOT inflight AND next_attempt_at <= now() AND head)::bigint AS ready,
       count(*) FILTER (WHERE status = 'pending' AND NOT inflight AND failed_before)::bigint AS behind_failed,
       count(*) FILTER (WHERE status = 'pending' AND NOT inflight AND next_attempt_at > now())::bigint AS retry_scheduled,
       count(*) FILTER (WHERE inflight)::bigint AS inflight,
       count(*) FILTER (WHERE stuck)::bigint AS stuck,
       coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE status IN ('pending', 'publishing'))), 0)::float8 AS oldest_age_seconds
FROM k;

-- StuckClaims samples the rows of stuck claims (see OutboxHealth), with
-- their claim's lease (claim_*: none for a row of the previous protocol).
-- name: StuckClaims :many
SELECT e.id, e.event_id, e.aggregate_id, e.locked_by, e.claimed_at, e.lease_until,
       c.claimed_at AS claim_claimed_at, c.lease_until AS claim_lease_until
FROM outbox_events e
LEFT JOIN outbox_claims c ON c.lock_token = e.lock_token
WHERE e.lock_token IS NOT NULL
  AND e.status IN ('pending', 'publishing')
  AND (coalesce(c.lease_until, e.lease_until) < now()
       OR coalesce(c.claimed_at, e.claimed_at) < now() - make_interval(secs => @max_processing_seconds::float8)
       OR (c.lock_token IS NULL AND e.lease_until IS NULL))
ORDER BY e.id
LIMIT @row_limit;

-- name: FailedByReason :many
SELECT coalesce(error_reason, 'unknown')::text AS reason, count(*)::bigint AS n
FROM outbox_events
WHERE status = 'failed'
GROUP BY 1
ORDER BY n DESC, reason;

-- ConsumersBehind counts, per inbox consumer, the published events of the
-- aggregate types it consumes that it has not received although they were
-- published more than @waiting_seconds ago and more than @margin_seconds
-- after the last event it received (the margin covers an event applied
-- before the relay recorded it published). A consumer with such events has
-- applied nothing for longer than @waiting_seconds while events wait for
-- it: its projector is down or stalled.
-- name: ConsumersBehind :many
WITH last AS (
    SELECT consumer, max(received_at) AS last_received_at, array_agg(DISTINCT aggregate_type) AS types
    FROM inbox_events
    GROUP BY consumer
)
SELECT last.consumer,
       last.last_received_at::timestamptz AS last_received_at,
       (SELECT count(*)
        FROM outbox_events o
        WHERE o.status = 'published'
          AND o.published_at > last.last_received_at + make_interval(secs => @margin_seconds::float8)
          AND o.published_at < now() - make_interval(secs => @waiting_seconds::float8)
          AND o.aggregate_type = ANY(last.types))::bigint AS waiting
FROM last
ORDER BY last.consumer;

-- ConsumersMissing counts, per inbox consumer, the published events of its
-- aggregate types that it never received although they were published more
-- than waiting_seconds ago: its read model stays behind them, whatever the
-- transport's reason. Only events published since the oldest event the
-- consumer still holds in its inbox (inbox retention deletes older rows)
-- and within lookback_seconds are counted.
-- name: ConsumersMissing :many
WITH c AS (
    SELECT i.consumer, min(o.published_at) AS first_published_at, array_agg(DISTINCT i.aggregate_type) AS types
    FROM inbox_events i
    LEFT JOIN outbox_events o ON o.event_id = i.event_id
    GROUP BY i.consumer
)
SELECT c.consumer, m.missing::bigint AS missing, coalesce(m.oldest, now())::timestamptz AS oldest_missing
FROM c
CROSS JOIN LATERAL (
    SELECT count(*) AS missing, min(o.published_at) AS oldest
    FROM outbox_events o
    WHERE o.status = 'published'
      AND o.published_at >= greatest(c.first_published_at, now() - make_interval(secs => @lookback_seconds::float8))
      AND o.published_at < now() - make_interval(secs => @waiting_seconds::float8)
      AND o.aggregate_type = ANY(c.types)
      AND NOT EXISTS (SELECT 1 FROM inbox_events i WHERE i.consumer = c.consumer AND i.event_id = o.event_id)
) m
ORDER BY c.consumer;

-- name: InboxByConsumer :many
SELECT consumer,
       count(*)::bigint AS events,
       count(*) FILTER (WHERE processed_at IS NULL)::bigint AS unprocessed,
       count(*) FILTER (WHERE attempts > 1)::bigint AS retried,
       max(received_at)::timestamptz AS last_received_at
FROM inbox_events
GROUP BY consumer
ORDER BY consumer;

-- SelectOutboxRows is the row filter of `relayctl failed list`, `failed
-- resolve` and `replay`: rows in one of the given statuses, after after_id,
-- matching every filter that is set (ids: outbox row ids or event ids; the
-- time window applies to failed_at of failed and resolved rows and
-- published_at of published ones; cause is the reason of the row's last
-- error, its last error_history entry, which for a row failed as
-- max_attempts_exceeded is the error that spent the last attempt).
-- 'published' also selects the rows the log mode published: it leaves them
-- pending, and a row is published once inserted by a transaction older
-- than the published horizon of every slot in outbox_log_slots, with no
-- earlier row of its key failed, or replayed or resolved at or after a
-- horizon (relay's retention in the log mode decides the same; their time
-- window applies to created_at).
-- name: SelectOutboxRows :many
SELECT o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_version, o.event_type,
       o.topic, o.status, o.attempts, o.error_reason, o.last_error, o.error_history,
       o.replay_count, o.origin, o.created_at, o.failed_at, o.published_at, o.resolved_at
FROM outbox_events o
WHERE (o.status = ANY(@statuses::text[])
       OR ('published' = ANY(@statuses::text[]) AND o.status = 'pending'
           AND EXISTS (SELECT 1 FROM outbox_log_slots)
           AND NOT EXISTS (SELECT 1 FROM outbox_log_slots l
                           WHERE l.published_xmin IS NULL OR l.recovering
                              OR age(o.xmin) <= age(l.published_xmin::text::xid))
           AND NOT EXISTS (SELECT 1 FROM outbox_events b
                           WHERE b.topic = o.topic AND b.ordering_key = o.ordering_key AND b.id < o.id
                             AND (b.status = 'failed'
                                  OR ((b.status = 'resolved' OR b.replay_count > 0)
                                      AND EXISTS (SELECT 1 FROM outbox_log_slots l
                                                  WHERE age(b.xmin) <= age(l.published_xmin::text::xid)))))))
  AND o.id > @after_id
  AND ((cardinality(@row_ids::bigint[]) = 0 AND cardinality(@event_ids::uuid[]) = 0)
       OR o.id = ANY(@row_ids::bigint[]) OR o.event_id = ANY(@event_ids::uuid[]))
  AND (sqlc.narg(reason)::text IS NULL OR o.error_reason = sqlc.narg(reason)::text)
  AND (sqlc.narg(cause)::text IS NULL
       OR coalesce(o.error_history->-1->>'reason', o.error_reason) = sqlc.narg(cause)::text)
  AND (sqlc.narg(topic)::text IS NULL OR o.topic = sqlc.narg(topic)::text)
  AND (sqlc.narg(aggregate_type)::text IS NULL OR o.aggregate_type = sqlc.narg(aggregate_type)::text)
  AND (sqlc.narg(aggregate_id)::text IS NULL OR o.aggregate_id = sqlc.narg(aggregate_id)::text)
  AND (sqlc.narg(since)::timestamptz IS NULL
       OR CASE WHEN o.status IN ('failed', 'resolved') THEN o.failed_at ELSE coalesce(o.published_at, o.created_at) END >= sqlc.narg(since)::timestamptz)
  AND (sqlc.narg(until)::timestamptz IS NULL
       OR CASE WHEN o.status IN ('failed', 'resolved') THEN o.failed_at ELSE coalesce(o.published_at, o.created_at) END < sqlc.narg(until)::timestamptz)
ORDER BY o.id
LIMIT @row_limit;

-- ReplayOutboxRows moves the rows still in one of the statuses back to
-- pending for an immediate attempt: attempts reset, claim cleared,
-- replay_count + 1. error_history, last_error and error_reason are kept.
-- With 'published', pending rows move too: the caller selected them as
-- published by the log mode (SelectOutboxRows) in the same transaction.
-- name: ReplayOutboxRows :many
UPDATE outbox_events
SET status          = 'pending',
    next_attempt_at = 'epoch', -- ready now for every claim (see the blocking index)
    attempts        = 0,
    locked_by       = NULL,
    lock_token      = NULL,
    lease_until     = NULL,
    claimed_at      = NULL,
    failed_at       = NULL,
    resolved_at     = NULL,
    resolve_audit_id = NULL,
    replay_count    = replay_count + 1
WHERE id = ANY(@ids::bigint[])
  AND (status = ANY(@statuses::text[]) OR ('published' = ANY(@statuses::text[]) AND status = 'pending'))
RETURNING id, event_id;

-- ResolveFailedOutboxRows closes failed rows that must never be sent
-- (`relayctl failed resolve`): status resolved, resolved_at, and the
-- admin_audit row that says who and why. Only rows still failed move; the
-- caller compares what came back with what it meant to resolve.
-- name: ResolveFailedOutboxRows :many
UPDATE outbox_events
SET status           = 'resolved',
    resolved_at      = now(),
    resolve_audit_id = @audit_id
WHERE id = ANY(@ids::bigint[]) AND status = 'failed'
RETURNING id, event_id;

-- PendingBehind counts the pending rows held back behind the given rows
-- (same topic and ordering key, later id): what resolving them releases.
-- name: PendingBehind :one
SELECT count(*)::bigint AS n
FROM outbox_events p
WHERE p.status = 'pending'
  AND EXISTS (SELECT 1 FROM outbox_events f
              WHERE f.id = ANY(@ids::bigint[])
                AND f.topic = p.topic AND f.ordering_key = p.ordering_key AND f.id < p.id);

-- name: InsertReplayAudit :one
INSERT INTO outbox_replays (requested_by, reason, filter, from_status, row_count, event_ids)
VALUES (@requested_by, @reason, @filter, @from_status, @row_count, @event_ids::uuid[])
RETURNING id, created_at;

-- ExtendReplayAudit adds the rows of a later batch to a throttled replay's
-- single audit row, in that batch's transaction.
-- name: ExtendReplayAudit :exec
UPDATE outbox_replays
SET row_count = row_count + @row_count,
    event_ids = event_ids || @event_ids::uuid[]
WHERE id = @id;
