-- SeenInboxEvents returns which of event_ids the consumer already applied.
-- name: SeenInboxEvents :many
SELECT event_id FROM inbox_events
WHERE consumer = @consumer AND event_id = ANY(@event_ids::uuid[]);

-- CountInboxEvents counts the events a consumer applied.
-- name: CountInboxEvents :one
SELECT count(*) FROM inbox_events WHERE consumer = @consumer;

-- DeleteExpiredInboxEvents removes up to batch_size inbox rows of the
-- consumer processed more than retention_seconds ago, oldest first, through
-- inbox_events_processed_idx (consumer, processed_at). A row without
-- processed_at is never deleted. Call it repeatedly until it returns less
-- than batch_size.
-- name: DeleteExpiredInboxEvents :execrows
DELETE FROM inbox_events i
WHERE i.consumer = @consumer::text AND i.event_id IN (
    SELECT d.event_id
    FROM inbox_events d
    WHERE d.consumer = @consumer::text
      AND d.processed_at < now() - make_interval(secs => @retention_seconds::float8)
    ORDER BY d.processed_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
);
