-- Queries of the relay (relay/internal/claim). The claim protocol is
-- documented in docs/design.md and docs/decisions/0020-hot-claim.md.
-- A claimed row stays 'pending' and carries the claim's lock_token (in
-- flight = pending with a lock_token); the claim's lease is its row in
-- outbox_claims. Every write to a claimed row is fenced by
-- (lock_token, status = 'pending'): a worker that lost its lease changes
-- nothing.
--
-- Those fenced writes (mark, retry, failure, release) name their rows by
-- id and compare the status concatenated with the empty string, an
-- expression no partial index's predicate matches, so the planner finds
-- the rows by primary key. With a plain status = 'pending' it could read
-- them through outbox_events_pending_idx, which holds an entry for every
-- row written since the last VACUUM (dead ones included, which its
-- estimates do not see): a mark of 20 rows after 10,000 events read 433
-- buffers to find them instead of 60, more with each batch until the next
-- VACUUM (TestFencedWritesReadByPrimaryKey).

-- LockClaimPartitions serializes the claim and reclaim transactions that
-- work on one partition (outbox_partitions): it takes the transaction-level
-- advisory lock of each partition in @partitions, in ascending order (two
-- replicas whose sets overlap during a handover cannot deadlock), and the
-- schema's old claim lock in shared mode, so replicas of the previous
-- release (which take it exclusively) still serialize with these during a
-- rolling upgrade. It must be the first statement of the transaction; the
-- locks are released at commit or rollback.
--
-- It also makes the transaction's commit asynchronous (synchronous_commit
-- off, for this transaction only): a claim or takeover that a database
-- crash loses is a lease that ended early, which the lock token already
-- fences (its rows are pending or held by the old token again, and are
-- published again: a duplicate, never a loss or a reordering). So the
-- claim does not wait for a WAL flush of its own before the batch is
-- published, and adds none to the writers' commits.
-- name: LockClaimPartitions :exec
SELECT set_config('synchronous_commit', 'off', true),
       pg_advisory_xact_lock_shared(hashtextextended('eventrelay.outbox.claim.' || current_schema(), 0)),
       count(pg_advisory_xact_lock(hashtext('eventrelay.outbox.claim.' || current_schema()), s.partition))
FROM (SELECT DISTINCT unnest(@partitions::int[]) AS partition ORDER BY 1) AS s;

-- ClaimOutboxEvents claims up to batch_size ready rows of the given
-- partitions (outbox_partition_of(ordering_key)), oldest first, and fair
-- across topics: besides the oldest ready rows ("fifo") it takes up to
-- topic_share rows of every topic with pending rows, those of them that are
-- ready ("per_topic": the topics found by a skip scan of
-- outbox_events_pending_key_idx, each one's first rows read from it in
-- (ordering_key, id) order, index-only: heads of keys first), and
-- keeps batch_size of them taking each topic's oldest in turn ("picked").
-- So a backlog on one topic delays another topic's fresh rows by at most
-- one claim. The share is read only when "fifo" is full. Within a key the kept rows are a prefix (rank within the
-- topic follows id), as the head-of-line rule needs. A row is
-- claimable only when no earlier row of its (topic, ordering_key) is in
-- flight, failed, or waiting for a retry, and every earlier pending row of
-- its key is claimed with it (head-of-line rule). A row in flight is
-- pending with a lock_token: the candidate scans pass over such rows
-- (their heap tuple says so: a read bounded by the rows in flight, not by
-- the backlog), and "ordered" treats one as blocking its key's later rows
-- (it is an earlier pending row this claim did not lock). Run it after
-- LockClaimPartitions of the same partitions in the same transaction.
--
-- "Ready" (candidate) and "waiting for a retry" (blocking) are evaluated
-- with the same now(), and a pending row is one or the other: fresh,
-- reclaimed and replayed rows carry next_attempt_at = 'epoch' (always
-- ready); only scheduled retries carry a real time. So every earlier row of
-- a candidate's key is published, or blocking, or a candidate itself.
--
-- A candidate locked by another transaction is skipped (SKIP LOCKED), and
-- then the later rows of its key must wait too: "ordered" keeps a locked
-- row only when every pending row of its key before it was locked by this
-- claim (the skipped ones are missing). It reads, per key, the key's first
-- n pending rows, n being how many of the key's rows were locked, and
-- keeps a locked row when it is the key's pending row of the same rank:
-- the locked rows are pending rows, so the k-th locked row is the k-th
-- pending row exactly when the k-1 pending rows before it are all locked.
-- One index read per key, of as many entries as the claim takes of it
-- (counting the rows before each locked row read a key's entries once per
-- row: 52,000 buffers of a 500-row claim at 100 rows per key). Claims of one partition are serialized by its lock (and a
-- key lives in one partition), so such a lock is normally not another
-- claim's: it is a fenced late write of a publisher that lost its lease,
-- racing the takeover (Postgres keeps the lock it took to re-check the row
-- until that transaction ends), or an operator's UPDATE. The rule holds
-- whoever holds the lock, so it does not depend on the partition locks.
-- Rows dropped there stay locked by this transaction until it commits and
-- are claimed by a later claim, in order.
--
-- Plan: the candidates come from outbox_events_pending_idx in id order
-- (the partition is computed from the index's ordering_key, rows of other
-- partitions are passed over); for each, the NOT EXISTS probes outbox_events_blocking_idx on (topic,
-- ordering_key, id < c.id), and "ordered" reads each key's first rows from
-- outbox_events_pending_key_idx. "OFFSET 0" keeps the NOT EXISTS a
-- correlated subplan: without it the planner may turn it into an anti join
-- that materializes the whole blocking set and compares it with every
-- candidate (O(candidates x in-flight rows)).
-- name: ClaimOutboxEvents :many
WITH RECURSIVE topics AS (
    -- No topic (so no share) unless "fifo" filled the batch: a fifo of
    -- fewer rows took every candidate, the share's included, and a live
    -- claim skips the share's scans (decision 0045). Here, not in the
    -- share's WHERE, where it changed the share's plan (decision 0023).
    (SELECT t.topic FROM outbox_events t WHERE t.status = 'pending'
       AND (SELECT count(*) FROM fifo) >= @batch_size
     ORDER BY t.topic LIMIT 1)
    UNION ALL
    SELECT (SELECT t.topic FROM outbox_events t WHERE t.status = 'pending' AND t.topic > topics.topic
            ORDER BY t.topic LIMIT 1)
    FROM topics
    WHERE topics.topic IS NOT NULL
),
fifo AS (
    SELECT c.id, c.topic, c.ordering_key
    FROM outbox_events c
    WHERE c.status = 'pending'
      AND c.next_attempt_at <= now()
      AND c.lock_token IS NULL
      AND outbox_partition_of(c.ordering_key) = ANY(@partitions::int[])
      AND NOT EXISTS (
          SELECT 1
          FROM outbox_events b
          WHERE b.topic = c.topic
            AND b.ordering_key = c.ordering_key
            AND b.id < c.id
            AND (b.status IN ('publishing', 'failed')
                 OR (b.status = 'pending' AND b.next_attempt_at > 'epoch'::timestamptz
                     AND b.next_attempt_at > now()))
          OFFSET 0
      )
    ORDER BY c.id
    LIMIT @batch_size
),
per_topic AS (
    SELECT f.id, f.topic, f.ordering_key
    FROM topics t
    CROSS JOIN LATERAL (
        SELECT h.id, h.topic, h.ordering_key, h.next_attempt_at
        FROM (
            -- index-only on outbox_events_pending_key_idx, in its order.
            -- The LIMIT keeps it so: without one, the planner may read the
            -- topic's every pending row from outbox_events_pending_idx and
            -- sort them, a cost that grows with the backlog (decision
            -- 0020). It is a subquery so that the planner does not know
            -- its value: knowing it (the plan for the claim's values, the
            -- first five executions of the prepared statement), and taking
            -- the topic's pending rows for fewer (no statistics on status),
            -- it read and sorted them all: 150,000 heap fetches per claim
            -- in a drain of 200,000 rows (decision 0023). Five shares
            -- (topic_share is a quarter of the batch) leave room for a
            -- batch of rows in flight to pass over.
            SELECT k.id
            FROM outbox_events k
            WHERE k.status = 'pending'
              AND (k.topic, k.ordering_key, k.id) >= (t.topic, '', 0)
              AND k.topic = t.topic
              AND outbox_partition_of(k.ordering_key) = ANY(@partitions::int[])
            ORDER BY k.topic, k.ordering_key, k.id
            LIMIT (SELECT 5 * @topic_share::int)
        ) k
        -- each row's heap tuple: the rows in flight are passed over, so
        -- they do not take the topic's share (lock_token in the index
        -- scan above would make the planner read the topic's every
        -- pending row from outbox_events_pending_idx and sort them)
        JOIN outbox_events h ON h.id = k.id
        WHERE h.lock_token IS NULL
        LIMIT @topic_share
    ) f
    WHERE t.topic IS NOT NULL
      AND f.next_attempt_at <= now()
      AND NOT EXISTS (
          SELECT 1
          FROM outbox_events b
          WHERE b.topic = f.topic
            AND b.ordering_key = f.ordering_key
            AND b.id < f.id
            AND (b.status IN ('publishing', 'failed')
                 OR (b.status = 'pending' AND b.next_attempt_at > 'epoch'::timestamptz
                     AND b.next_attempt_at > now()))
          OFFSET 0
      )
),
picked AS (
    SELECT p.id, p.topic, p.ordering_key, p.rank_in_topic
    FROM (SELECT u.id, u.topic, u.ordering_key, row_number() OVER (PARTITION BY u.topic ORDER BY u.id) AS rank_in_topic
          FROM (SELECT id, topic, ordering_key FROM fifo UNION SELECT id, topic, ordering_key FROM per_topic) u) p
    ORDER BY p.rank_in_topic, p.id
    LIMIT @batch_size
),
-- A key's waiting versions travel together: each picked key, in pick
-- order, brings its ready pending rows from its first picked one on, so a
-- backlog of several versions per key fills the batch with whole keys
-- (published as few, fuller requests) rather than with one version of as
-- many keys. One pending version per key (live traffic) claims as before.
heads AS (
    SELECT h.topic, h.ordering_key, h.id, h.rank_in_topic
    FROM (SELECT p.topic, p.ordering_key, p.id, p.rank_in_topic,
                 row_number() OVER (PARTITION BY p.topic, p.ordering_key ORDER BY p.id) AS nth
          FROM picked p) h
    WHERE h.nth = 1
    ORDER BY h.rank_in_topic, h.id
),
grouped AS (
    SELECT g.id
    FROM heads h
    CROSS JOIN LATERAL (
        -- the key's rows from the head on, index-only on
        -- outbox_events_pending_key_idx in its order. Whether they are
        -- ready is checked on the rows themselves ("locked"): with
        -- next_attempt_at here, which only outbox_events_pending_idx
        -- holds, the planner (which takes both partial indexes for small)
        -- read the key's rows from that index instead, filtering on the
        -- key: past the later rows of every key, per key (10,000 index
        -- entries per key at 10,000 pending rows, 35,000 buffers and
        -- 350 ms per claim of 500 rows, in the plan for the claim's values
        -- and in the generic plan the driver's prepared statement switches
        -- to after five executions alike;
        -- TestClaimReadsEachPickedKeyFromTheKeyIndex). The row comparison
        -- gives that index no id range to start from either.
        SELECT k.id
        FROM outbox_events k
        WHERE k.status = 'pending'
          AND k.topic = h.topic
          AND k.ordering_key = h.ordering_key
          AND (k.topic, k.ordering_key, k.id) >= (h.topic, h.ordering_key, h.id)
        ORDER BY k.topic, k.ordering_key, k.id
        LIMIT @batch_size
    ) g
    -- No ORDER BY: the nested loop the LATERAL ... LIMIT makes keeps the
    -- heads' order, and stops at batch_size rows instead of reading every
    -- head's rows to sort them. Which rows are taken is a matter of
    -- fairness only: "ordered" keeps each key's rows a prefix in any case.
    LIMIT @batch_size
),
locked AS (
    SELECT x.id, x.topic, x.ordering_key
    FROM outbox_events x
    WHERE x.id = ANY(ARRAY(SELECT id FROM grouped))
      -- by primary key (top of this file): a plan made on a small table
      -- read them through a whole status index instead
      AND x.status || '' = 'pending'
      AND x.next_attempt_at <= now()
      AND x.lock_token IS NULL
    FOR UPDATE SKIP LOCKED
),
ordered AS (
    SELECT u.id
    FROM (SELECT topic, ordering_key, array_agg(id ORDER BY id) AS ids
          FROM locked
          GROUP BY topic, ordering_key) g
    CROSS JOIN LATERAL (
        -- the key's first pending rows (in flight ones included), as many
        -- as it has locked ones (index-only on
        -- outbox_events_pending_key_idx, in its order)
        SELECT ARRAY(
            SELECT p.id
            FROM outbox_events p
            WHERE p.status = 'pending'
              AND p.topic = g.topic
              AND p.ordering_key = g.ordering_key
            ORDER BY p.topic, p.ordering_key, p.id
            LIMIT cardinality(g.ids)) AS ids
        OFFSET 0 -- read once per key, not once per locked row
    ) pending
    CROSS JOIN LATERAL unnest(g.ids) WITH ORDINALITY AS u(id, rank_in_key)
    WHERE u.id = pending.ids[u.rank_in_key]
),
-- The claim changes only the lock columns, which no index holds: a HOT
-- update (status, next_attempt_at and every indexed column unchanged).
-- lease_until stays NULL on the row: the lease is the claim's row in
-- outbox_claims.
claimed AS (
    UPDATE outbox_events o
    SET locked_by  = @worker_id::text,
        lock_token = @lock_token::uuid,
        claimed_at = now()
    FROM ordered
    WHERE o.id = ordered.id
    -- headers as text: the relay decodes them once (as jsonb, the driver would
    -- parse them to validate them first).
    RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_version,
              o.event_type, o.schema_version, o.ordering_key, o.topic, o.headers::text AS headers,
              o.payload, o.occurred_at, o.created_at, o.attempts
),
-- The lease row names the partitions of the rows it holds, not every
-- partition the claim looked in: a reclaim of any of them finds it, and a
-- claim of a few keys does not write the replica's whole partition set.
lease AS (
    INSERT INTO outbox_claims (lock_token, locked_by, claimed_at, lease_until, partitions, ids, held)
    SELECT @lock_token::uuid, @worker_id::text, now(), now() + make_interval(secs => @lease_seconds::float8),
           array_agg(DISTINCT outbox_partition_of(c.ordering_key)), array_agg(c.id), count(*)
    FROM claimed c
    HAVING count(*) > 0
)
SELECT id, event_id, aggregate_type, aggregate_id, aggregate_version,
       event_type, schema_version, ordering_key, topic, headers,
       payload, occurred_at, created_at, attempts
FROM claimed;

-- MarkOutboxPublished records successful publishes (one row per id, with
-- its Pub/Sub message id) and returns each row's commit-to-publish latency.
-- name: MarkOutboxPublished :many
UPDATE outbox_events o
SET status       = 'published',
    published_at = now(),
    message_id   = u.message_id,
    lock_token   = NULL,
    lease_until  = NULL
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@message_ids::text[]) AS message_id) AS u
WHERE o.id = u.id
  AND o.lock_token = @lock_token::uuid
  -- by primary key, not through the status indexes (top of this file)
  AND o.status || '' = 'pending'
RETURNING o.id, extract(epoch FROM o.published_at - o.created_at)::float8 AS latency_seconds;

-- ScheduleOutboxRetry unlocks rows after a transient failure: next
-- attempt after the given delay, the error appended to error_history (the
-- last 20 entries are kept), attempts + 1 unless held (the environment's
-- fault, e.g. Pub/Sub unavailable: the topic is held and the row's
-- attempts are not spent; the entry says "held": true).
-- name: ScheduleOutboxRetry :execrows
UPDATE outbox_events o
SET attempts        = o.attempts + CASE WHEN u.held THEN 0 ELSE 1 END,
    next_attempt_at = now() + make_interval(secs => u.delay_seconds),
    last_error      = u.error,
    error_reason    = u.reason,
    error_history   = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
                      || jsonb_build_array(jsonb_build_object(
                             'at', now(), 'reason', u.reason, 'error', u.error,
                             'attempt', o.attempts + CASE WHEN u.held THEN 0 ELSE 1 END, 'worker', o.locked_by,
                             'next_attempt_at', now() + make_interval(secs => u.delay_seconds))
                         || CASE WHEN u.held THEN jsonb_build_object('held', true) ELSE '{}'::jsonb END),
    locked_by       = NULL,
    lock_token      = NULL,
    lease_until     = NULL,
    claimed_at      = NULL
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@delay_seconds::float8[]) AS delay_seconds,
             unnest(@reasons::text[]) AS reason, unnest(@errors::text[]) AS error,
             unnest(@held::boolean[]) AS held) AS u
WHERE o.id = u.id
  AND o.lock_token = @lock_token::uuid
  -- by primary key, not through the status indexes (top of this file)
  AND o.status || '' = 'pending';

-- MarkOutboxFailed ends rows terminally. reason is the row's error_reason
-- (e.g. max_attempts_exceeded); cause is the reason of the last error, kept
-- in error_history. attempted says whether Pub/Sub was called (attempts+1).
-- name: MarkOutboxFailed :execrows
UPDATE outbox_events o
SET status        = 'failed',
    failed_at     = now(),
    attempts      = o.attempts + CASE WHEN u.attempted THEN 1 ELSE 0 END,
    last_error    = u.error,
    error_reason  = u.reason,
    error_history = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
                    || jsonb_build_array(jsonb_build_object(
                           'at', now(), 'reason', u.cause, 'error', u.error,
                           'attempt', o.attempts + CASE WHEN u.attempted THEN 1 ELSE 0 END,
                           'worker', o.locked_by)),
    lock_token    = NULL,
    lease_until   = NULL
FROM (SELECT unnest(@ids::bigint[]) AS id, unnest(@reasons::text[]) AS reason,
             unnest(@causes::text[]) AS cause, unnest(@errors::text[]) AS error,
             unnest(@attempted::boolean[]) AS attempted) AS u
WHERE o.id = u.id
  AND o.lock_token = @lock_token::uuid
  -- by primary key, not through the status indexes (top of this file)
  AND o.status || '' = 'pending';

-- ReleaseOutboxEvents hands claimed rows back untouched (no attempt
-- counted; a HOT update): rows behind a failed head of their key, and rows
-- not started at shutdown.
-- name: ReleaseOutboxEvents :execrows
UPDATE outbox_events
SET locked_by   = NULL,
    lock_token  = NULL,
    lease_until = NULL,
    claimed_at  = NULL
WHERE id = ANY(@ids::bigint[])
  AND lock_token = @lock_token::uuid
  -- by primary key, not through the status indexes (top of this file)
  AND status || '' = 'pending';

-- SettleOutboxClaim records that settled rows of a claim were marked
-- (published, retried, failed or released) and deletes the claim's lease
-- row once it holds none. Run it in the outcome's transaction, after the
-- fenced writes (whose row counts it is given), so the in-flight count
-- (OutboxStats) follows the outcomes.
-- name: SettleOutboxClaim :exec
WITH settled AS (
    UPDATE outbox_claims
    SET held = held - @settled::int
    WHERE lock_token = @lock_token::uuid
      AND held > @settled::int
    RETURNING lock_token
)
DELETE FROM outbox_claims c
WHERE c.lock_token = @lock_token::uuid
  AND c.held <= @settled::int
  AND NOT EXISTS (SELECT 1 FROM settled);

-- ExtendOutboxLease keeps a long batch's claim alive: one row, the
-- claim's lease. It returns how many rows the claim still holds (none
-- once it was taken over or settled).
-- name: ExtendOutboxLease :many
UPDATE outbox_claims
SET lease_until = now() + make_interval(secs => @lease_seconds::float8)
WHERE lock_token = @lock_token::uuid
  AND held > 0
RETURNING held::bigint AS held;

-- ReclaimOutboxEvents takes over the rows of the given partitions whose
-- claim's lease expired, or that were claimed longer than max_processing
-- ago: they lose their lock (a HOT update) and are ready for any claim,
-- with a lease_expired entry in error_history. The expired claims are
-- found in outbox_claims (a row per claimed batch), their rows by primary
-- key: no scan of the backlog. Each claim's held count drops by the rows
-- taken, and an expired claim that holds none is deleted. Run it after
-- LockClaimPartitions of the same partitions in the same transaction.
-- Returns the previous holder.
-- name: ReclaimOutboxEvents :many
WITH expired AS (
    SELECT c.lock_token, c.locked_by, c.claimed_at, c.ids
    FROM outbox_claims c
    WHERE (c.lease_until < now() OR c.claimed_at < now() - make_interval(secs => @max_processing_seconds::float8))
      AND c.partitions && @partitions::int[]
),
lost AS (
    SELECT o.id, e.lock_token, e.locked_by, e.claimed_at
    FROM expired e
    JOIN outbox_events o ON o.id = ANY(e.ids)
    WHERE o.lock_token = e.lock_token
      -- by primary key, not through the status indexes (top of this file)
      AND o.status || '' = 'pending'
      AND outbox_partition_of(o.ordering_key) = ANY(@partitions::int[])
    FOR UPDATE OF o SKIP LOCKED
),
taken AS (
    UPDATE outbox_events o
    SET next_attempt_at = 'epoch', -- ready now, for every claim (see ClaimOutboxEvents)
        last_error      = 'claim of worker ' || lost.locked_by || ' expired (claimed at '
                          || lost.claimed_at::text || '): taken over',
        error_history   = CASE WHEN jsonb_array_length(o.error_history) >= 20 THEN o.error_history - 0 ELSE o.error_history END
                          || jsonb_build_array(jsonb_build_object(
                                 'at', now(), 'reason', 'lease_expired', 'error', 'claim expired: taken over',
                                 'attempt', o.attempts, 'worker', lost.locked_by)),
        locked_by       = NULL,
        lock_token      = NULL,
        lease_until     = NULL,
        claimed_at      = NULL
    FROM lost
    WHERE o.id = lost.id
    RETURNING o.id, lost.lock_token, lost.locked_by
),
settled AS (
    UPDATE outbox_claims c
    SET held = c.held - t.n
    FROM (SELECT lock_token, count(*)::int AS n FROM taken GROUP BY lock_token) t
    WHERE c.lock_token = t.lock_token
)
SELECT taken.id, taken.locked_by::text AS previous_worker
FROM taken;

-- DeleteSettledOutboxClaims deletes the expired claims of the given
-- partitions that hold no row any more (all taken over or settled). Run
-- it after ReclaimOutboxEvents, in its transaction.
-- name: DeleteSettledOutboxClaims :execrows
DELETE FROM outbox_claims c
WHERE (c.lease_until < now() OR c.claimed_at < now() - make_interval(secs => @max_processing_seconds::float8))
  AND c.partitions && @partitions::int[]
  AND NOT EXISTS (
      SELECT 1
      FROM outbox_events o
      WHERE o.id = ANY(c.ids)
        AND o.lock_token = c.lock_token
        AND o.status || '' = 'pending'
  );

-- OutboxStats feeds the gauges: one index-only pass over the pending and
-- failed partial indexes (cost grows with the backlog, not the table), and
-- the claims' lease rows for the rows in flight (pending with a lock) and
-- the stuck ones. pending counts the rows waiting, not those in flight.
-- name: OutboxStats :one
WITH pending AS (
    SELECT count(*) AS n, min(created_at) AS oldest
    FROM outbox_events
    WHERE status = 'pending'
), publishing AS (
    SELECT coalesce(sum(held), 0) AS n,
           coalesce(sum(held) FILTER (WHERE lease_until < now()
                                         OR claimed_at < now() - make_interval(secs => @max_processing_seconds::float8)), 0) AS stuck
    FROM outbox_claims
), failed AS (
    SELECT count(*) AS n
    FROM outbox_events
    WHERE status = 'failed'
)
SELECT greatest(pending.n - publishing.n, 0)::bigint AS pending,
       publishing.n::bigint AS publishing,
       publishing.stuck::bigint AS stuck,
       failed.n::bigint AS failed,
       coalesce(extract(epoch FROM now() - pending.oldest), 0)::float8 AS oldest_pending_age_seconds
FROM pending, publishing, failed;

-- DeletePublishedOutboxEvents removes up to batch_size published rows older
-- than the retention. Call it repeatedly until it returns less than
-- batch_size.
-- name: DeletePublishedOutboxEvents :execrows
DELETE FROM outbox_events
WHERE id IN (
    SELECT d.id
    FROM outbox_events d
    WHERE d.status = 'published'
      AND d.published_at < now() - make_interval(secs => @retention_seconds::float8)
    ORDER BY d.published_at
    LIMIT @batch_size
    FOR UPDATE SKIP LOCKED
);

-- SetOutboxWakeup records whether this publisher wants a NOTIFY on the next
-- commit (armed: armed_until = now() + ttl) or claims again by itself
-- (busy: armed_until = now()). See migrations/00005_outbox_wakeups.sql.
-- name: SetOutboxWakeup :exec
INSERT INTO outbox_wakeups (worker_id, armed_until, seen_at)
VALUES (@worker_id, CASE WHEN @armed::boolean THEN now() + make_interval(secs => @ttl_seconds::float8) ELSE now() END, now())
ON CONFLICT (worker_id) DO UPDATE
SET armed_until = excluded.armed_until,
    seen_at     = excluded.seen_at;

-- DeleteOutboxWakeup removes this publisher's row when it stops, and the
-- rows of publishers not seen for stale_seconds (replicas that died).
-- name: DeleteOutboxWakeup :exec
DELETE FROM outbox_wakeups
WHERE worker_id = @worker_id
   OR seen_at < now() - make_interval(secs => @stale_seconds::float8);
