package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pipeline is a DBTX of sqlc-generated packages (outboxdb, inboxdb, a
// service's own) that queues statements into a pgx.Batch instead of running
// them, so generated queries can be sent in one round trip:
//
//	b := &pgx.Batch{}
//	q := inboxdb.New(postgres.Pipeline{Batch: b})
//	q.InsertInboxEvent(ctx, a)      // queued; the result is zero
//	q.InsertInboxEvent(ctx, b)      // queued
//	br := tx.SendBatch(ctx, b)      // one round trip
//	tag, err := br.Exec()           // the first statement's result, and so on
//
// Only Exec is supported (queries with :exec and :execrows); Query and
// QueryRow fail with ErrPipelineExecOnly.
type Pipeline struct{ Batch *pgx.Batch }

// ErrPipelineExecOnly is returned by Pipeline.Query and Pipeline.QueryRow.
var ErrPipelineExecOnly = errors.New("postgres: a pipeline queues Exec statements only")

// Exec queues the statement and returns an empty command tag.
func (p Pipeline) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p.Batch.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

// Query fails: results of queued statements are read from the batch.
func (Pipeline) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, ErrPipelineExecOnly
}

// QueryRow fails on Scan: results of queued statements are read from the
// batch.
func (Pipeline) QueryRow(context.Context, string, ...any) pgx.Row { return pipelineRow{} }

type pipelineRow struct{}

func (pipelineRow) Scan(...any) error { return ErrPipelineExecOnly }
