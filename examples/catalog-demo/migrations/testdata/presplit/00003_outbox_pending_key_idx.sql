-- Head-of-line check, second half: the pending rows of a key in id order.
--
-- A claim locks its candidates FOR UPDATE SKIP LOCKED. A pending row that
-- another transaction holds locked is skipped, and, being pending, it does
-- not block its key's later rows either, so without a second check they
-- were claimed ahead of it. Such locks are not only the claims' own (those
-- are serialized by the claim lock): a publisher that lost its lease and
-- writes its late outcome while the takeover commits keeps the row locked
-- until its transaction ends (Postgres locks the new row version to
-- re-check the WHERE clause, which then fails), and an operator's UPDATE
-- may hold one. The claim now counts, per candidate, the pending rows of
-- its key before it and takes the candidate only when all of them are in
-- its own locked set (ClaimOutboxEvents in sqlc/queries/outbox).
--
-- Built CONCURRENTLY (outside a transaction) so a large outbox keeps
-- taking writes; IF NOT EXISTS makes an interrupted run repeatable (an
-- interrupted CONCURRENTLY build leaves an INVALID index: drop it and run
-- the migration again).

-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_events_pending_key_idx
    ON outbox_events (topic, ordering_key, id)
    WHERE status = 'pending';

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS outbox_events_pending_key_idx;
