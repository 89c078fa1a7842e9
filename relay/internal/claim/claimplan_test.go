package claim_test

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// planWriter is an outboxdb.DBTX that runs queries returning rows under
// EXPLAIN (ANALYZE, BUFFERS) instead of for their rows, collecting the
// plan: the plan of the publisher's own generated claim statement.
type planWriter struct {
	tx   pgx.Tx
	plan *strings.Builder
}

var errExplained = errors.New("explained, not executed")

func (p planWriter) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return p.tx.Exec(ctx, sql, args...)
}

func (p planWriter) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.tx.QueryRow(ctx, sql, args...)
}

func (p planWriter) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := p.tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		p.plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return nil, errExplained
}

// explainClaim runs the claim transaction's statements (the partitions'
// claim locks, then the claim of up to bulk rows) with the claim under
// EXPLAIN ANALYZE, rolls it back and returns the plan.
func explainClaim(ctx context.Context, pool *pgxpool.Pool, parts []int32, bulk int) (string, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the claim must not stick
	var plan strings.Builder
	q := outboxdb.New(planWriter{tx: tx, plan: &plan})
	if err := q.LockClaimPartitions(ctx, parts); err != nil {
		return "", err
	}
	_, err = q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
		WorkerID: "bench-explain", LockToken: [16]byte{1}, LeaseSeconds: 30, BatchSize: int32(bulk), TopicShare: int32(max(1, bulk/4)), Partitions: parts,
	})
	if !errors.Is(err, errExplained) {
		return "", err
	}
	return plan.String(), nil
}
