-- Partition ownership of the relay (relay/internal/partitions,
-- migrations/00004_outbox_partitions.sql). A replica's heartbeat runs these
-- in one transaction: join (membership), renew its partitions, release
-- those above its fair share, acquire unowned or expired ones up to it.
-- Ownership divides the work only; claims stay correct at the row level
-- while two replicas believe they own one partition.

-- LockOutboxPublisher serializes a replica's heartbeat and leave
-- transactions: each takes it first, so a leave waits for a heartbeat
-- still committing on the server (one its replica cancelled at shutdown
-- after sending the commit) and then releases what that heartbeat
-- acquired, instead of missing it and leaving it to wait for its lease.
-- name: LockOutboxPublisher :exec
SELECT pg_advisory_xact_lock(hashtext('eventrelay.outbox.publisher.' || current_schema()), hashtext(@worker_id::text));

-- JoinOutboxPublishers registers or renews this replica's membership and
-- returns the live members (this one included) and the partition count.
-- The count of the others reads the statement's snapshot, which does not
-- see the upsert: hence + 1.
-- name: JoinOutboxPublishers :one
WITH me AS (
    INSERT INTO outbox_publishers (worker_id, alive_until)
    VALUES (@worker_id::text, now() + make_interval(secs => @ttl_seconds::float8))
    ON CONFLICT (worker_id) DO UPDATE SET alive_until = excluded.alive_until
    RETURNING worker_id
)
SELECT (SELECT count(*) FROM outbox_publishers p
        WHERE p.alive_until > now() AND p.worker_id <> @worker_id::text)::bigint + 1 AS members,
       (SELECT count(*) FROM outbox_partitions)::bigint AS partitions;

-- DeleteExpiredOutboxPublishers forgets members whose heartbeat stopped.
-- name: DeleteExpiredOutboxPublishers :exec
DELETE FROM outbox_publishers WHERE alive_until < now();

-- LeaveOutboxPublishers removes this replica's membership (graceful stop):
-- the others' fair shares grow at their next heartbeat.
-- name: LeaveOutboxPublishers :exec
DELETE FROM outbox_publishers WHERE worker_id = @worker_id::text;

-- RenewOutboxPartitions extends the lease of the partitions this replica
-- still owns at the epoch it acquired them with, and returns them. A
-- partition missing from the result was taken over (lost).
-- name: RenewOutboxPartitions :many
UPDATE outbox_partitions p
SET lease_until = now() + make_interval(secs => @ttl_seconds::float8)
FROM (SELECT unnest(@partitions::int[]) AS partition, unnest(@epochs::bigint[]) AS epoch) AS u
WHERE p.partition = u.partition
  AND p.epoch = u.epoch
  AND p.owner = @worker_id::text
RETURNING p.partition, p.epoch;

-- ReleaseOutboxPartitions gives partitions up (above the fair share, or at
-- shutdown), fenced by (owner, epoch). The next owner adds 1 to the epoch.
-- name: ReleaseOutboxPartitions :many
UPDATE outbox_partitions p
SET owner       = NULL,
    lease_until = NULL
FROM (SELECT unnest(@partitions::int[]) AS partition, unnest(@epochs::bigint[]) AS epoch) AS u
WHERE p.partition = u.partition
  AND p.epoch = u.epoch
  AND p.owner = @worker_id::text
RETURNING p.partition;

-- LeaveOutboxPartitions gives up every partition a stopping replica owns,
-- whatever the epoch: its claims are over, and a heartbeat whose outcome
-- it never saw (cancelled at shutdown after its commit) may have acquired
-- partitions it does not know it owns, which would otherwise wait for
-- their lease to end.
-- name: LeaveOutboxPartitions :many
UPDATE outbox_partitions
SET owner       = NULL,
    lease_until = NULL
WHERE owner = @worker_id::text
RETURNING partition;

-- AcquireOutboxPartitions takes up to @wanted partitions that nobody owns
-- or whose lease expired, lowest first, skipping rows another heartbeat
-- holds (it never waits), and starts a new epoch on each.
-- name: AcquireOutboxPartitions :many
WITH free AS (
    SELECT f.partition, f.owner
    FROM outbox_partitions f
    WHERE f.owner IS NULL OR f.lease_until IS NULL OR f.lease_until < now()
    ORDER BY f.partition
    LIMIT @wanted
    FOR UPDATE SKIP LOCKED
)
UPDATE outbox_partitions p
SET owner       = @worker_id::text,
    epoch       = p.epoch + 1,
    lease_until = now() + make_interval(secs => @ttl_seconds::float8)
FROM free
WHERE p.partition = free.partition
RETURNING p.partition, p.epoch, coalesce(free.owner, '')::text AS previous_owner;

-- ListOutboxPartitions shows every partition's owner, epoch and lease
-- (relayctl status, tests, the bench).
-- name: ListOutboxPartitions :many
SELECT partition, coalesce(owner, '')::text AS owner, epoch, lease_until,
       coalesce(owner IS NOT NULL AND lease_until >= now(), false)::boolean AS leased
FROM outbox_partitions
ORDER BY partition;

-- AnnounceOutboxPartitions tells the other publishers on the channel that
-- partitions were released or are wanted: they run their heartbeat at once
-- instead of at its next tick (payload biz.PartitionsChanged).
-- name: AnnounceOutboxPartitions :exec
SELECT pg_notify(@channel::text, @payload::text);
