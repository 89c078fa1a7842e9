package bench

// The statements of the ceilings. They have the shape of the daemons'
// statements (issue 3: head-of-line claim serialized by an advisory lock,
// FOR UPDATE SKIP LOCKED, token-fenced batch mark; issue 4: inbox insert +
// version-guarded upsert) so that "ceiling" means "the same database work
// without Pub/Sub or decoding". When the publisher and projector export
// their generated queries, the ceilings switch to them (see the report's
// notes for which ones were used).

// sqlClaimLock serializes claimers so two replicas never claim rows of one
// ordering key at the same time (head-of-line rule).
const sqlClaimLock = `SELECT pg_advisory_xact_lock(hashtext('eventrelay.outbox.claim'))`

// sqlClaim claims up to $1 ready rows whose ordering key has no earlier
// row in flight, failed or waiting for a retry.
const sqlClaim = `
WITH ready AS (
    SELECT p.id
    FROM outbox_events p
    WHERE p.status = 'pending'
      AND p.next_attempt_at <= now()
      AND NOT EXISTS (
          SELECT 1 FROM outbox_events b
          WHERE b.topic = p.topic AND b.ordering_key = p.ordering_key AND b.id < p.id
            AND (b.status IN ('publishing', 'failed') OR (b.status = 'pending' AND b.attempts > 0)))
    ORDER BY p.id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_events o
SET status = 'publishing', locked_by = $2, lock_token = $3,
    lease_until = now() + make_interval(secs => $4), claimed_at = now()
FROM ready
WHERE o.id = ready.id
RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_version, o.event_type,
          o.schema_version, o.ordering_key, o.topic, o.headers, o.payload, o.occurred_at, o.created_at, o.attempts`

// sqlMarkPublished records a batch of outcomes, fenced by the claim token.
const sqlMarkPublished = `
UPDATE outbox_events o
SET status = 'published', published_at = now(), message_id = m.message_id,
    lease_until = NULL
FROM unnest($1::bigint[], $2::text[]) AS m(id, message_id)
WHERE o.id = m.id AND o.lock_token = $3 AND o.status = 'publishing'`

// sqlRetention deletes up to $2 rows published before $1.
const sqlRetention = `
WITH doomed AS (
    SELECT id FROM outbox_events
    WHERE status = 'published' AND published_at < $1
    ORDER BY published_at
    LIMIT $2
)
DELETE FROM outbox_events o USING doomed WHERE o.id = doomed.id`

// sqlInboxInsert is inboxdb.InsertInboxEvent (sqlc/queries/inbox), repeated
// here because pgx batches need the text.
const sqlInboxInsert = `
INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, message_id, processed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, now())
ON CONFLICT (consumer, event_id) DO NOTHING`

// sqlProjectionUpsert applies a video state if it is newer than the stored
// one (a tombstone is the same write with deleted_at set).
const sqlProjectionUpsert = `
INSERT INTO video_projection (video_id, uploader_id, title, description, duration_micros, status, media_status,
    analysis_status, version, created_at, source_updated_at, deleted_at, last_event_id, occurred_at, projected_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now())
ON CONFLICT (video_id) DO UPDATE SET
    uploader_id = excluded.uploader_id, title = excluded.title, description = excluded.description,
    duration_micros = excluded.duration_micros, status = excluded.status, media_status = excluded.media_status,
    analysis_status = excluded.analysis_status, version = excluded.version, created_at = excluded.created_at,
    source_updated_at = excluded.source_updated_at, deleted_at = excluded.deleted_at,
    last_event_id = excluded.last_event_id, occurred_at = excluded.occurred_at, projected_at = now()
WHERE video_projection.version < excluded.version`

// Plumbing.
const (
	sqlReset = `TRUNCATE outbox_events, inbox_events, video_projection, videos, outbox_replays, admin_audit RESTART IDENTITY`

	sqlCountPending   = `SELECT count(*) FROM outbox_events WHERE status <> 'published'`
	sqlCountPublished = `SELECT count(*) FROM outbox_events WHERE status = 'published'`
	sqlCountInbox     = `SELECT count(*) FROM inbox_events`

	// sqlDrainSpan is the time from the first claim to the last publish.
	sqlDrainSpan = `SELECT count(*), coalesce(extract(epoch FROM max(published_at) - min(claimed_at)), 0)
FROM outbox_events WHERE status = 'published'`

	sqlTableSizes = `SELECT pg_table_size('outbox_events'), pg_indexes_size('outbox_events'),
       (SELECT count(*) FROM outbox_events)`
)
