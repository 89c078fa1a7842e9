-- name: InsertInboxEvent :execrows
INSERT INTO inbox_events (consumer, event_id, aggregate_type, aggregate_id, aggregate_version, event_type, message_id, processed_at)
VALUES (@consumer, @event_id, @aggregate_type, @aggregate_id, @aggregate_version, @event_type, @message_id, now())
ON CONFLICT (consumer, event_id) DO NOTHING;
