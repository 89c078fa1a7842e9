package partitions

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// Store keeps the outbox partitions' leases and the replicas' membership
// on Postgres (sqlc/queries/outbox/partitions.sql).
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a Store on pool (search_path = the outbox schema).
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Heartbeat renews the replica's membership and partition leases and
// balances its partitions toward FairShare (sqlc/queries/outbox/partitions.sql): in
// one transaction, join (renew membership), renew the owned partitions,
// release those above the fair share, acquire free or expired ones up to
// it. Acquisition skips rows another heartbeat holds and never waits, so
// concurrent heartbeats cannot deadlock.
func (s *Store) Heartbeat(ctx context.Context, req HeartbeatRequest) (Heartbeat, error) {
	var hb Heartbeat
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		hb = Heartbeat{}
		q := outboxdb.New(tx)
		ttl := req.TTL.Seconds()
		if err := q.LockOutboxPublisher(ctx, req.Worker); err != nil {
			return fmt.Errorf("taking the replica's lock: %w", err)
		}
		if err := q.DeleteExpiredOutboxPublishers(ctx); err != nil {
			return fmt.Errorf("forgetting expired relays: %w", err)
		}
		m, err := q.JoinOutboxPublishers(ctx, outboxdb.JoinOutboxPublishersParams{WorkerID: req.Worker, TtlSeconds: ttl})
		if err != nil {
			return fmt.Errorf("joining: %w", err)
		}
		hb.Members, hb.Partitions = int(m.Members), int(m.Partitions)
		parts, epochs := split(req.Owned)
		renewed, err := q.RenewOutboxPartitions(ctx, outboxdb.RenewOutboxPartitionsParams{
			WorkerID: req.Worker, TtlSeconds: ttl, Partitions: parts, Epochs: epochs,
		})
		if err != nil {
			return fmt.Errorf("renewing partitions: %w", err)
		}
		for _, r := range renewed {
			hb.Owned = append(hb.Owned, OwnedPartition{Partition: r.Partition, Epoch: r.Epoch})
		}
		for _, p := range req.Owned {
			if !slices.ContainsFunc(hb.Owned, func(o OwnedPartition) bool { return o.Partition == p.Partition }) {
				hb.Lost = append(hb.Lost, p.Partition)
			}
		}
		share := FairShare(hb.Partitions, hb.Members)
		slices.SortFunc(hb.Owned, func(a, b OwnedPartition) int { return int(a.Partition - b.Partition) })
		if len(hb.Owned) > share {
			// Give up the highest ones; the others take them at their
			// next heartbeat.
			parts, epochs := split(hb.Owned[share:])
			released, err := q.ReleaseOutboxPartitions(ctx, outboxdb.ReleaseOutboxPartitionsParams{
				WorkerID: req.Worker, Partitions: parts, Epochs: epochs,
			})
			if err != nil {
				return fmt.Errorf("releasing partitions: %w", err)
			}
			hb.Owned, hb.Released = hb.Owned[:share], released
		}
		if wanted := share - len(hb.Owned); wanted > 0 {
			acquired, err := q.AcquireOutboxPartitions(ctx, outboxdb.AcquireOutboxPartitionsParams{
				WorkerID: req.Worker, TtlSeconds: ttl, Wanted: int32(wanted),
			})
			if err != nil {
				return fmt.Errorf("acquiring partitions: %w", err)
			}
			for _, a := range acquired {
				p := OwnedPartition{Partition: a.Partition, Epoch: a.Epoch}
				hb.Owned = append(hb.Owned, p)
				hb.Acquired = append(hb.Acquired, AcquiredPartition{OwnedPartition: p, PreviousOwner: a.PreviousOwner})
			}
		}
		return nil
	})
	if err != nil {
		return Heartbeat{}, fmt.Errorf("outbox partition heartbeat of %s: %w", req.Worker, postgres.Classify(err))
	}
	return hb, nil
}

// Leave releases every partition worker owns and removes its membership;
// it returns how many partitions were released. It does not go by the
// partitions the replica believes it owns: a heartbeat cancelled at
// shutdown after its commit acquired partitions the replica never learnt
// of, and they would wait for their lease to end. It waits for such a
// heartbeat still committing on the server (LockOutboxPublisher).
func (s *Store) Leave(ctx context.Context, worker string) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		if err := q.LockOutboxPublisher(ctx, worker); err != nil {
			return fmt.Errorf("taking the replica's lock: %w", err)
		}
		released, err := q.LeaveOutboxPartitions(ctx, worker)
		if err != nil {
			return fmt.Errorf("releasing partitions: %w", err)
		}
		n = int64(len(released))
		return q.LeaveOutboxPublishers(ctx, worker)
	})
	if err != nil {
		return 0, fmt.Errorf("leaving the outbox partitions of %s: %w", worker, postgres.Classify(err))
	}
	return n, nil
}

// PartitionOwner is one row of outbox_partitions.
type PartitionOwner struct {
	Partition int32
	Owner     string // empty: unowned
	Epoch     int64
	// Leased says the owner's lease has not ended.
	Leased     bool
	LeaseUntil time.Time
}

// Partitions lists every outbox partition with its owner.
func (s *Store) Partitions(ctx context.Context) ([]PartitionOwner, error) {
	rows, err := outboxdb.New(s.pool).ListOutboxPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing outbox partitions: %w", postgres.Classify(err))
	}
	out := make([]PartitionOwner, len(rows))
	for i, r := range rows {
		out[i] = PartitionOwner{Partition: r.Partition, Owner: r.Owner, Epoch: r.Epoch, Leased: r.Leased, LeaseUntil: r.LeaseUntil.Time}
	}
	return out, nil
}

// split returns the partitions and epochs of owned as parallel arrays.
func split(owned []OwnedPartition) ([]int32, []int64) {
	parts, epochs := make([]int32, len(owned)), make([]int64, len(owned))
	for i, o := range owned {
		parts[i], epochs[i] = o.Partition, o.Epoch
	}
	return parts, epochs
}
