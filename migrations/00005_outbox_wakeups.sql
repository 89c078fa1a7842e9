-- Coalesced wake-ups: which publishers want a NOTIFY.
--
-- A NOTIFY takes a database-wide lock at commit that is held until the
-- commit record is flushed, so every notifying commit of the cluster waits
-- for the previous one's flush. At hundreds of commits per second that
-- queue is most of the writers' commit latency, and a publisher woken by
-- every commit claims a handful of rows each time.
--
-- A publisher with a fetch cooldown keeps one row here. While its claims
-- keep returning rows it is busy (armed_until in the past) and claims again
-- after its cooldown without being told; after a claim comes back empty it
-- arms (armed_until = now() + a few poll intervals, renewed at each idle
-- poll) and waits for a NOTIFY. outbox.Writer notifies only when some row
-- is armed, or when the table is empty (no publisher of this kind runs:
-- the behaviour before this table). seen_at lets publishers delete the rows
-- of replicas that died without removing theirs.

-- +goose Up
CREATE TABLE outbox_wakeups (
    worker_id   text        PRIMARY KEY,
    armed_until timestamptz NOT NULL,
    seen_at     timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE outbox_wakeups;
