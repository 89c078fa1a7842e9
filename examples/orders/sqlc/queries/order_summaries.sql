-- The read model: order_summaries, written by the projection only.

-- UpsertOrderSummary applies the state of an order at a version. It affects
-- 0 rows when the read model already holds that version or a newer one (a
-- stale event).
-- name: UpsertOrderSummary :execrows
INSERT INTO order_summaries (order_id, customer_id, amount_cents, currency, status, version, placed_at,
                             source_updated_at, last_event_id, projected_at)
VALUES (@order_id, @customer_id, @amount_cents, @currency, @status, @version, @placed_at,
        @source_updated_at, @last_event_id, now())
ON CONFLICT (order_id) DO UPDATE
SET customer_id       = excluded.customer_id,
    amount_cents      = excluded.amount_cents,
    currency          = excluded.currency,
    status            = excluded.status,
    version           = excluded.version,
    placed_at         = excluded.placed_at,
    source_updated_at = excluded.source_updated_at,
    last_event_id     = excluded.last_event_id,
    projected_at      = now()
WHERE order_summaries.version < excluded.version;

-- name: GetOrderSummary :one
SELECT * FROM order_summaries WHERE order_id = @order_id;

-- name: CustomerSummary :one
SELECT count(*)                                                         AS orders,
       count(*) FILTER (WHERE status = 'placed')                        AS placed,
       count(*) FILTER (WHERE status = 'paid')                          AS paid,
       count(*) FILTER (WHERE status = 'cancelled')                     AS cancelled,
       coalesce(sum(amount_cents) FILTER (WHERE status = 'paid'), 0)::bigint AS paid_cents
FROM order_summaries
WHERE customer_id = @customer_id;
