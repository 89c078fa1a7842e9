-- The source of truth: the orders table.

-- name: InsertOrder :one
INSERT INTO orders (id, customer_id, amount_cents, currency)
VALUES (@id, @customer_id, @amount_cents, @currency)
RETURNING *;

-- LockOrder takes the row lock that serializes the writers of one order
-- (versions stay contiguous, one outbox event each).
-- name: LockOrder :one
SELECT * FROM orders WHERE id = @id FOR UPDATE;

-- name: GetOrder :one
SELECT * FROM orders WHERE id = @id;

-- name: PayOrder :one
UPDATE orders
SET status = 'paid', payment_ref = @payment_ref, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;

-- name: CancelOrder :one
UPDATE orders
SET status = 'cancelled', cancel_reason = @cancel_reason, version = version + 1, updated_at = now()
WHERE id = @id
RETURNING *;
