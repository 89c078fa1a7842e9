-- Operations (orders-relayctl rebuild and verify, the end-to-end test).

-- ListOrdersForRestatement pages through the orders for rebuild, optionally
-- only the given ids. FOR SHARE holds off writers of the page until the
-- restatements are committed, so each restatement carries the row's
-- current version.
-- name: ListOrdersForRestatement :many
SELECT * FROM orders
WHERE id > @after_id
  AND (cardinality(@ids::uuid[]) = 0 OR id = ANY(@ids::uuid[]))
ORDER BY id
LIMIT @page_size
FOR SHARE;

-- name: CountOrders :one
SELECT count(*)::bigint AS total
FROM orders
WHERE cardinality(@ids::uuid[]) = 0 OR id = ANY(@ids::uuid[]);

-- name: CountOrderSummaries :one
SELECT count(*)::bigint AS total FROM order_summaries;

-- VerifyOrderSummaries compares orders with order_summaries and returns up
-- to @samples rows per kind of drift, each with the total of its kind:
--   missing   order without a summary
--   extra     summary without an order
--   stale     summary version older than the order's
--   ahead     summary version newer than the order's
--   diverged  same version, different state
-- name: VerifyOrderSummaries :many
WITH cmp AS (
    SELECT coalesce(o.id, s.order_id)::uuid AS id,
           coalesce(o.version, 0)::bigint AS source_version,
           coalesce(s.version, 0)::bigint AS summary_version,
           CASE
               WHEN s.order_id IS NULL THEN 'missing'
               WHEN o.id IS NULL THEN 'extra'
               WHEN s.version < o.version THEN 'stale'
               WHEN s.version > o.version THEN 'ahead'
               WHEN (o.customer_id, o.amount_cents, o.currency, o.status, o.placed_at, o.updated_at)
                    IS DISTINCT FROM
                    (s.customer_id, s.amount_cents, s.currency, s.status, s.placed_at, s.source_updated_at) THEN 'diverged'
           END AS kind
    FROM orders o
    FULL OUTER JOIN order_summaries s ON s.order_id = o.id
), drift AS (
    SELECT id, kind, source_version, summary_version,
           row_number() OVER (PARTITION BY kind ORDER BY id) AS rn,
           count(*) OVER (PARTITION BY kind) AS kind_total
    FROM cmp
    WHERE kind IS NOT NULL
)
SELECT id, kind::text AS kind, source_version, summary_version, kind_total::bigint AS kind_total
FROM drift
WHERE rn <= @samples::bigint
ORDER BY kind, id;
