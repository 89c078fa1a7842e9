-- Key-hash partitions of the outbox, owned by publisher replicas under a
-- lease, so several replicas claim disjoint keys in parallel.
--
-- A row's partition is outbox_partition_of(ordering_key): its ordering
-- key's hashtext modulo the number of rows of outbox_partitions (64). All
-- versions of a key fall in one partition. The function is the one place
-- that says so (the claim and reclaim queries call it; it is inlined).
--
-- outbox_partitions: one row per partition. owner is the worker id of the
-- replica that claims from it until lease_until; every acquisition adds 1
-- to epoch, and renewals and releases are fenced by (owner, epoch), so a
-- replica that lost a partition cannot renew it. Ownership only divides
-- the work: the row-level rules of the claim (head-of-line, lock_token
-- fencing) keep per-key order and exclusive claims even while two
-- replicas briefly both believe they own a partition (see
-- docs/design.md, "Partitions and ownership").
--
-- outbox_publishers: the live replicas (membership). Each replica renews
-- alive_until with its partitions' leases; the fair share of a replica is
-- ceil(partitions / live members).

-- +goose Up
CREATE TABLE outbox_partitions (
    partition   integer     PRIMARY KEY CHECK (partition >= 0),
    owner       text,
    epoch       bigint      NOT NULL DEFAULT 0,
    lease_until timestamptz
);

INSERT INTO outbox_partitions (partition)
SELECT g FROM generate_series(0, 63) AS g;

CREATE TABLE outbox_publishers (
    worker_id   text        PRIMARY KEY CHECK (worker_id <> ''),
    alive_until timestamptz NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION outbox_partition_of(ordering_key text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT (hashtext(ordering_key) & 2147483647) % 64 $$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION IF EXISTS outbox_partition_of(text);
DROP TABLE IF EXISTS outbox_publishers;
DROP TABLE IF EXISTS outbox_partitions;
