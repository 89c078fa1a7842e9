package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// explainer is an outboxdb.DBTX that runs queries under EXPLAIN (ANALYZE,
// BUFFERS) instead of for their rows: the plan of the publisher's own
// generated claim statement.
type explainer struct {
	tx   pgx.Tx
	plan *strings.Builder
}

var errExplained = errors.New("bench: explained, not executed")

func (e explainer) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return e.tx.Exec(ctx, sql, args...)
}

func (e explainer) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return e.tx.QueryRow(ctx, sql, args...)
}

func (e explainer) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	rows, err := e.tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return nil, err
		}
		e.plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return nil, errExplained
}

// explainClaim runs the publisher's claim transaction under EXPLAIN
// ANALYZE and rolls it back, writing the plan to OutDir/profiles/<name>.txt.
// It returns the path and a summary: the execution time and how the
// candidate rows were found (which index).
func (r *Runner) explainClaim(ctx context.Context, name string) (string, string, error) {
	var plan strings.Builder
	tx, err := r.db.Pool.Begin(ctx)
	if err != nil {
		return "", "", fmt.Errorf("explaining the claim: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the claim must not stick
	parts, err := allPartitions(ctx, r.db)
	if err != nil {
		return "", "", fmt.Errorf("explaining the claim: %w", err)
	}
	q := outboxdb.New(explainer{tx: tx, plan: &plan})
	if err := q.LockClaimPartitions(ctx, parts); err != nil {
		return "", "", fmt.Errorf("explaining the claim: %w", err)
	}
	_, err = q.ClaimOutboxEvents(ctx, outboxdb.ClaimOutboxEventsParams{
		WorkerID: "bench-explain", LockToken: [16]byte{1}, LeaseSeconds: 30, BatchSize: int32(r.cfg.Bulk), TopicShare: int32(max(1, r.cfg.Bulk/4)), Partitions: parts,
	})
	if !errors.Is(err, errExplained) {
		return "", "", fmt.Errorf("explaining the claim: %w", err)
	}
	dir := r.profileDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, name+".txt")
	if err := os.WriteFile(path, []byte(plan.String()), 0o644); err != nil {
		return "", "", err
	}
	var exec, scan string
	for _, l := range strings.Split(plan.String(), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Execution Time") {
			exec = l
		}
		// The candidate scan is the first scan of outbox_events "c".
		if i := strings.Index(l, " on outbox_events c "); i > 0 && scan == "" {
			scan = strings.TrimPrefix(l[:i], "->  ")
		}
	}
	return r.rel(path), exec + "; candidates: " + scan, nil
}
