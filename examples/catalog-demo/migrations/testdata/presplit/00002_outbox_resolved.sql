-- Resolved outbox rows: failed rows an operator closed with
-- `relayctl failed resolve` because they must never be sent.
--
-- 'resolved' is terminal like 'failed' but, unlike it, does not hold back
-- the later rows of its ordering key (the blocking index and the claim name
-- 'publishing' and 'failed' only), is not counted as failed, is never
-- selected by replay unless asked for (--include-resolved) and is not
-- deleted by retention (only 'published' rows are): it stays as the record
-- of what was never sent. failed_at, error_reason and error_history are
-- kept; resolve_audit_id is the admin_audit row that says who and why.

--
-- Outside a transaction so a large outbox is not locked against writes
-- while the new status check is validated: the check is added NOT VALID
-- (enforced for new rows at once), the old one dropped, then the new one
-- validated under a lock that lets writes continue. Each step is
-- idempotent, so a run interrupted half-way can be run again.

-- +goose NO TRANSACTION
-- +goose Up
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS resolved_at timestamptz;
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS resolve_audit_id bigint;
ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS outbox_events_status_v2_check;
ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_status_v2_check
    CHECK (status IN ('pending', 'publishing', 'published', 'failed', 'resolved')) NOT VALID;
ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS outbox_events_status_check;
ALTER TABLE outbox_events VALIDATE CONSTRAINT outbox_events_status_v2_check;

-- +goose Down
-- Resolved rows become failed again (never sent either way).
UPDATE outbox_events SET status = 'failed' WHERE status = 'resolved';
ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS outbox_events_status_check;
ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_status_check
    CHECK (status IN ('pending', 'publishing', 'published', 'failed')) NOT VALID;
ALTER TABLE outbox_events DROP CONSTRAINT IF EXISTS outbox_events_status_v2_check;
ALTER TABLE outbox_events VALIDATE CONSTRAINT outbox_events_status_check;
ALTER TABLE outbox_events DROP COLUMN IF EXISTS resolve_audit_id;
ALTER TABLE outbox_events DROP COLUMN IF EXISTS resolved_at;
