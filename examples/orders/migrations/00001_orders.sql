-- The orders service's own tables: its source of truth (orders) and its
-- read model (order_summaries). eventrelay's tables (outbox, inbox, ...)
-- come from eventrelay's own migration set; both sets are applied to the
-- same schema, each with its own goose version table.

-- +goose Up

-- Source of truth. Every write bumps version and appends one outbox event
-- in the same transaction.
CREATE TABLE orders (
    id            uuid        PRIMARY KEY,
    customer_id   text        NOT NULL CHECK (length(customer_id) BETWEEN 1 AND 200),
    amount_cents  bigint      NOT NULL CHECK (amount_cents > 0),
    currency      text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    status        text        NOT NULL DEFAULT 'placed' CHECK (status IN ('placed', 'paid', 'cancelled')),
    payment_ref   text        NOT NULL DEFAULT '',
    cancel_reason text        NOT NULL DEFAULT '',
    version       bigint      NOT NULL DEFAULT 1 CHECK (version >= 1),
    placed_at     timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX orders_customer_idx ON orders (customer_id);

-- Read model, written only by the projection (version-guarded upsert):
-- one row per order at the newest version seen.
CREATE TABLE order_summaries (
    order_id          uuid        PRIMARY KEY,
    customer_id       text        NOT NULL,
    amount_cents      bigint      NOT NULL,
    currency          text        NOT NULL,
    status            text        NOT NULL,
    version           bigint      NOT NULL,
    placed_at         timestamptz NOT NULL,
    source_updated_at timestamptz NOT NULL,
    last_event_id     uuid        NOT NULL,
    projected_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX order_summaries_customer_idx ON order_summaries (customer_id);

-- +goose Down
DROP TABLE order_summaries;
DROP TABLE orders;
