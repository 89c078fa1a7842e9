-- The claim of the previous release (status pending -> publishing), as its
-- sqlc code sent it: $1 worker, $2 lock token, $3 lease seconds,
-- $4 partitions, $5 batch size, $6 topic share.
-- name: ClaimOutboxEvents :many
WITH RECURSIVE topics AS (
    (SELECT t.topic FROM outbox_events t WHERE t.status = 'pending' ORDER BY t.topic LIMIT 1)
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
      AND outbox_partition_of(c.ordering_key) = ANY($4::int[])
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
    LIMIT $5
),
per_topic AS (
    SELECT h.id, h.topic, h.ordering_key
    FROM topics t
    CROSS JOIN LATERAL (
        -- index-only on outbox_events_pending_key_idx, in its order
        SELECT k.id
        FROM outbox_events k
        WHERE k.status = 'pending'
          AND (k.topic, k.ordering_key, k.id) >= (t.topic, '', 0)
          AND k.topic = t.topic
          AND outbox_partition_of(k.ordering_key) = ANY($4::int[])
        ORDER BY k.topic, k.ordering_key, k.id
        LIMIT $6
    ) f
    JOIN outbox_events h ON h.id = f.id
    WHERE t.topic IS NOT NULL
      AND h.next_attempt_at <= now()
      AND NOT EXISTS (
          SELECT 1
          FROM outbox_events b
          WHERE b.topic = h.topic
            AND b.ordering_key = h.ordering_key
            AND b.id < h.id
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
    LIMIT $5
),
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
        LIMIT $5
    ) g
    -- No ORDER BY: the nested loop the LATERAL ... LIMIT makes keeps the
    -- heads' order, and stops at batch_size rows instead of reading every
    -- head's rows to sort them. Which rows are taken is a matter of
    -- fairness only: "ordered" keeps each key's rows a prefix in any case.
    LIMIT $5
),
locked AS (
    SELECT x.id, x.topic, x.ordering_key
    FROM outbox_events x
    WHERE x.id = ANY(ARRAY(SELECT id FROM grouped))
      AND x.status = 'pending'
      AND x.next_attempt_at <= now()
    FOR UPDATE SKIP LOCKED
),
ordered AS (
    SELECT u.id
    FROM (SELECT topic, ordering_key, array_agg(id ORDER BY id) AS ids
          FROM locked
          GROUP BY topic, ordering_key) g
    CROSS JOIN LATERAL (
        -- the key's first pending rows, as many as it has locked ones
        -- (index-only on outbox_events_pending_key_idx, in its order)
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
)
UPDATE outbox_events o
SET status      = 'publishing',
    locked_by   = $1::text,
    lock_token  = $2::uuid,
    lease_until = now() + make_interval(secs => $3::float8),
    claimed_at  = now()
FROM ordered
WHERE o.id = ordered.id
RETURNING o.id, o.event_id, o.aggregate_type, o.aggregate_id, o.aggregate_version,
          o.event_type, o.schema_version, o.ordering_key, o.topic, o.headers::text AS headers,
          o.payload, o.occurred_at, o.created_at, o.attempts

