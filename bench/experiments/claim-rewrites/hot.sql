-- A claim that leaves the status pending and sets only columns no index
-- covers (lock_token, locked_by, lease_until, claimed_at): a HOT update once
-- outbox_events_publishing_idx is dropped (run.sh does). The mark is then the
-- only rewrite of the row. pgbench script, see README.md.
BEGIN;
SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock_shared(hashtextextended('eventrelay.outbox.claim.' || current_schema(), 0)), count(pg_advisory_xact_lock(hashtext('eventrelay.outbox.claim.' || current_schema()), s.partition)) FROM (SELECT generate_series(0,63) AS partition) s;
WITH locked AS (
    SELECT c.id, c.topic, c.ordering_key
    FROM outbox_events c
    WHERE c.status = 'pending'
      AND c.next_attempt_at <= now()
      AND (c.lease_until IS NULL OR c.lease_until < now())
      AND outbox_partition_of(c.ordering_key) = ANY(array(select generate_series(0,63)))
      AND NOT EXISTS (
          SELECT 1 FROM outbox_events b
          WHERE b.topic = c.topic AND b.ordering_key = c.ordering_key AND b.id < c.id
            AND (b.status IN ('publishing', 'failed')
                 OR (b.status = 'pending' AND b.next_attempt_at > 'epoch'::timestamptz AND b.next_attempt_at > now()))
          OFFSET 0)
    ORDER BY c.id LIMIT 500
    FOR UPDATE SKIP LOCKED
), upd AS (
UPDATE outbox_events o
SET locked_by = 'pgbench', lock_token = '00000000-0000-0000-0000-000000000001', lease_until = now() + interval '30 s', claimed_at = now()
FROM locked WHERE o.id = locked.id
RETURNING o.id, o.event_id, o.payload)
SELECT coalesce(string_agg(id::text, ','), '0') AS ids FROM upd \gset
COMMIT;
UPDATE outbox_events o SET status = 'published', published_at = now(), message_id = o.id::text, lock_token = NULL, lease_until = NULL
WHERE o.id = ANY('{:ids}'::bigint[]) AND o.lock_token = '00000000-0000-0000-0000-000000000001' AND o.status || '' = 'pending';
