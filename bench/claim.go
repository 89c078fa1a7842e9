package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// claimer is the database half of a publisher: claim a batch under a
// fresh token, mark it published. The ceiling loop and the scale scenario
// drive it with no Pub/Sub in between.
type claimer interface {
	// Claim claims up to bulk rows and returns their ids and the token.
	Claim(ctx context.Context, worker string, bulk int) ([]int64, uuid.UUID, error)
	// MarkPublished marks claimed rows published, fenced by token.
	MarkPublished(ctx context.Context, ids []int64, token uuid.UUID) error
	// Describe says which SQL is used, for the report.
	Describe() string
}

// publisherClaimer runs the publisher's own generated queries
// (internal/postgres/outboxdb, sqlc/queries/outbox/publisher.sql): the
// claim transaction (begun as postgres.ClaimTx) is LockClaimPartitions +
// ClaimOutboxEvents of every partition (one replica owning them all),
// exactly as the publisher's store issues it, and the mark is
// MarkOutboxPublished + SettleOutboxClaim in one transaction begun as
// postgres.OutcomeTx, as the publisher records a batch's outcomes.
type publisherClaimer struct {
	db    *DB
	parts []int32
}

// newPublisherClaimer reads the partitions of the outbox (all of them).
func newPublisherClaimer(ctx context.Context, db *DB) (publisherClaimer, error) {
	parts, err := allPartitions(ctx, db)
	return publisherClaimer{db: db, parts: parts}, err
}

// allPartitions lists every outbox partition.
func allPartitions(ctx context.Context, db *DB) ([]int32, error) {
	rows, err := outboxdb.New(db.Pool).ListOutboxPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing outbox partitions: %w", err)
	}
	parts := make([]int32, len(rows))
	for i, r := range rows {
		parts[i] = r.Partition
	}
	return parts, nil
}

func (c publisherClaimer) Describe() string {
	return "the publisher's queries (outboxdb.LockClaimPartitions + ClaimOutboxEvents of all partitions in one transaction; MarkOutboxPublished + SettleOutboxClaim in another)"
}

func (c publisherClaimer) Claim(ctx context.Context, worker string, bulk int) ([]int64, uuid.UUID, error) {
	token := uuid.Must(uuid.NewV7())
	var ids []int64
	err := pgx.BeginTxFunc(ctx, c.db.Pool, postgres.ClaimTx, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		if err := q.LockClaimPartitions(ctx, c.parts); err != nil {
			return err
		}
		rows, err := q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
			WorkerID: worker, LockToken: token, LeaseSeconds: 30, BatchSize: int32(bulk), TopicShare: int32(max(1, bulk/4)), Partitions: c.parts,
		})
		if err != nil {
			return err
		}
		ids = make([]int64, len(rows))
		for i := range rows {
			ids[i] = rows[i].ID
		}
		return nil
	})
	if err != nil {
		return nil, token, fmt.Errorf("claiming: %w", err)
	}
	return ids, token, nil
}

func (c publisherClaimer) MarkPublished(ctx context.Context, ids []int64, token uuid.UUID) error {
	msgIDs := make([]string, len(ids))
	for i, id := range ids {
		msgIDs[i] = "bench-" + strconv.FormatInt(id, 10)
	}
	err := pgx.BeginTxFunc(ctx, c.db.Pool, postgres.OutcomeTx, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		rows, err := q.MarkOutboxPublished(ctx, outboxdb.MarkOutboxPublishedParams{
			LockToken: token, Ids: ids, MessageIds: msgIDs,
		})
		if err != nil {
			return fmt.Errorf("marking published: %w", err)
		}
		if len(rows) != len(ids) {
			return fmt.Errorf("marking published: %d of %d rows matched their token", len(rows), len(ids))
		}
		if err := q.SettleOutboxClaim(ctx, outboxdb.SettleOutboxClaimParams{LockToken: token, Settled: int32(len(rows))}); err != nil {
			return fmt.Errorf("settling the claim: %w", err)
		}
		return nil
	})
	return err
}

// retention deletes every published row in batches with the publisher's
// retention query (retention 0: everything published so far) and returns
// how many rows it removed.
func retention(ctx context.Context, db *DB, batch int) (int64, error) {
	var total int64
	for {
		n, err := outboxdb.New(db.Pool).DeletePublishedOutboxEvents(ctx, outboxdb.DeletePublishedOutboxEventsParams{
			RetentionSeconds: 0, BatchSize: int32(batch),
		})
		if err != nil {
			return total, fmt.Errorf("retention: %w", err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// drainLoop claims and marks every pending row with workers concurrent
// loops and returns how many rows it moved and how long it took.
func drainLoop(ctx context.Context, db *DB, c claimer, bulk, workers int) (int, time.Duration, error) {
	var (
		mu    sync.Mutex
		total int
		first error
		wg    sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "bench-ceiling-" + strconv.Itoa(w)
			for ctx.Err() == nil {
				ids, token, err := c.Claim(ctx, name, bulk)
				if err == nil && len(ids) > 0 {
					err = c.MarkPublished(ctx, ids, token)
				}
				if err != nil {
					mu.Lock()
					if first == nil && !errors.Is(err, context.Canceled) {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
				mu.Lock()
				total += len(ids)
				mu.Unlock()
				if len(ids) == 0 {
					// Nothing claimable: done, or the rest is blocked behind
					// another worker's in-flight rows of the same keys.
					left, err := db.count(ctx, sqlCountPending)
					if err != nil || left == 0 {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	return total, time.Since(start), first
}
