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

// sqlClaimer runs the statements of sql.go.
type sqlClaimer struct{ db *DB }

func (c sqlClaimer) Describe() string {
	return "bench SQL in the publisher's shape (advisory-lock-serialized head-of-line claim, SKIP LOCKED, fenced unnest mark)"
}

func (c sqlClaimer) Claim(ctx context.Context, worker string, bulk int) ([]int64, uuid.UUID, error) {
	token := uuid.Must(uuid.NewV7())
	ids := make([]int64, 0, bulk)
	err := pgx.BeginFunc(ctx, c.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlClaimLock); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, sqlClaim, bulk, worker, token, 30.0)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values() // decode the whole row, as a publisher must
			if err != nil {
				return err
			}
			ids = append(ids, vals[0].(int64))
		}
		return rows.Err()
	})
	if err != nil {
		return nil, token, fmt.Errorf("claiming: %w", postgres.Classify(err))
	}
	return ids, token, nil
}

func (c sqlClaimer) MarkPublished(ctx context.Context, ids []int64, token uuid.UUID) error {
	msgIDs := make([]string, len(ids))
	for i, id := range ids {
		msgIDs[i] = "bench-" + strconv.FormatInt(id, 10)
	}
	tag, err := c.db.Pool.Exec(ctx, sqlMarkPublished, ids, msgIDs, token)
	if err != nil {
		return fmt.Errorf("marking published: %w", postgres.Classify(err))
	}
	if int(tag.RowsAffected()) != len(ids) {
		return fmt.Errorf("marking published: %d of %d rows matched their token", tag.RowsAffected(), len(ids))
	}
	return nil
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
