-- Operations (orders relayctl rebuild; verify is eventrelay's TableVerifier).

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
