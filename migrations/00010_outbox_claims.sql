-- The claim that does not rewrite the row.
--
-- A claimed row stays 'pending': the claim sets only its lock columns
-- (lock_token, locked_by, claimed_at), which no index holds, so with the
-- room fillfactor 50 leaves in the page it is a HOT update (no index
-- entry, only the changed bytes in the WAL). In flight is "pending with a
-- lock_token". The lease of a claimed batch is one row of outbox_claims,
-- written by the claim, moved by a lease extension, settled by the
-- outcomes and read by the reclaim and the in-flight and stuck counts, so
-- none of them needs an index on the rows. See
-- docs/decisions/0020-hot-claim.md.
--
-- Rolling upgrade: replicas of the previous release claim by setting
-- status 'publishing'. The CHECK below (NOT VALID: existing rows are not
-- scanned) makes such a claim fail with a check violation, so a replica of
-- the previous release stops claiming at once instead of claiming rows a
-- new replica holds. The rows it had in flight are then handed back to
-- pending, ready, with a lease_expired entry in error_history: the new
-- replicas publish them again (a duplicate, never a loss); the old
-- replica's late outcomes, fenced by status 'publishing', change nothing.
-- outbox_events_publishing_idx has no use then and is dropped
-- CONCURRENTLY (writers keep running).
--
-- Run outside a transaction (DROP INDEX CONCURRENTLY); every statement can
-- be run again after an interruption.

-- +goose NO TRANSACTION
-- +goose Up
CREATE TABLE IF NOT EXISTS outbox_claims (
    lock_token  uuid        PRIMARY KEY,
    locked_by   text        NOT NULL,
    claimed_at  timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    -- the partitions (outbox_partitions) of the claimed rows, so a
    -- reclaim reads only the claims of its own partitions
    partitions  integer[]   NOT NULL,
    -- the claimed rows, and how many of them the claim still holds
    ids         bigint[]    NOT NULL,
    held        integer     NOT NULL
);

-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint
                   WHERE conname = 'outbox_events_claim_keeps_pending'
                     AND conrelid = 'outbox_events'::regclass) THEN
        ALTER TABLE outbox_events
            ADD CONSTRAINT outbox_events_claim_keeps_pending CHECK (status <> 'publishing') NOT VALID;
    END IF;
END
$$;
-- +goose StatementEnd

UPDATE outbox_events o
SET status          = 'pending',
    next_attempt_at = 'epoch',
    last_error      = 'claim of worker ' || coalesce(o.locked_by, '?') || ' ended by the upgrade to the claim that keeps rows pending (claimed at '
                      || coalesce(o.claimed_at::text, '?') || '): taken over',
    error_history   = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
                      || jsonb_build_array(jsonb_build_object(
                             'at', now(), 'reason', 'lease_expired', 'error', 'claim ended by the upgrade: taken over',
                             'attempt', o.attempts, 'worker', o.locked_by)),
    locked_by       = NULL,
    lock_token      = NULL,
    lease_until     = NULL,
    claimed_at      = NULL
WHERE o.status = 'publishing';

DROP INDEX CONCURRENTLY IF EXISTS outbox_events_publishing_idx;

-- +goose Down
-- Back to the previous protocol: rows in flight under this one (pending
-- with a lock) are handed back unlocked (published again by the previous
-- release's replicas: a duplicate, never a loss), the lease table and the
-- CHECK go, and the reclaim's index comes back.
UPDATE outbox_events
SET locked_by   = NULL,
    lock_token  = NULL,
    lease_until = NULL,
    claimed_at  = NULL
WHERE lock_token IS NOT NULL AND status = 'pending';

DROP TABLE IF EXISTS outbox_claims;

ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS outbox_events_claim_keeps_pending;

CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_events_publishing_idx
    ON outbox_events (lease_until) INCLUDE (claimed_at, locked_by)
    WHERE status = 'publishing';
