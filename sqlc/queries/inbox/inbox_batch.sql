-- InsertInboxEvents records many events of one consumer at once (a batch
-- transaction before its handlers run; a non-transactional sink after the
-- sink accepted them). It returns the event ids that were new; the others
-- were duplicates. An empty message id is stored as NULL.
-- name: InsertInboxEvents :many
INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, message_id, processed_at)
SELECT @consumer::text, unnest(@event_ids::uuid[]), unnest(@aggregate_types::text[]), unnest(@aggregate_ids::text[]),
       unnest(@aggregate_versions::bigint[]), unnest(@event_types::text[]), NULLIF(unnest(@message_ids::text[]), ''), now()
ON CONFLICT (consumer, event_id) DO NOTHING
RETURNING event_id;

-- SeenInboxEvents returns which of event_ids the consumer already applied.
-- name: SeenInboxEvents :many
SELECT event_id FROM inbox_events
WHERE consumer = @consumer AND event_id = ANY(@event_ids::uuid[]);

-- CountInboxEvents counts the events a consumer applied.
-- name: CountInboxEvents :one
SELECT count(*) FROM inbox_events WHERE consumer = @consumer;
