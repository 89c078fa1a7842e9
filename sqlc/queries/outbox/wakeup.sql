-- OutboxUnannounced reports whether a writer that read every publisher
-- busy, and so commits without a NOTIFY, is still in flight (migration
-- 00009). It never waits for one.
-- name: OutboxUnannounced :one
SELECT outbox_unannounced()::boolean AS unannounced;
