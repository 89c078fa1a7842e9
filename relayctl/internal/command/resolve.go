package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

const resolveUsage = `
failed resolve --ids ID[,ID...] (--dry-run | --by WHO --why WHY)

Closes failed outbox rows that must never be sent (a test event, an event
no consumer may see): they move from failed to resolved, with resolved_at
and the admin_audit row that records who, why and the row and event ids.
A resolved row is never published, is not counted as failed (relayctl
status returns to clean), is not selected by replay unless
--include-resolved is given, and is not deleted by retention (it stays as
the record of what was never sent). A failed row holds back the later rows
of its aggregate (per-aggregate order); resolving it releases them, and the
publishers are woken. Resolve only what the aggregate's later events may
skip: with state-carrying events the next version carries the full state.

Every id must name a failed row (outbox row id or event id); otherwise
nothing changes and each offending id is named (exit 1). --dry-run prints
the same plan and changes nothing.`

// allStatuses are the outbox statuses a row can have.
var allStatuses = []string{"pending", "publishing", "published", "failed", "resolved"}

func failedResolve(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "failed resolve", resolveUsage)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	f := &rowFilter{}
	fs.StringVar(&f.ids, "ids", "", "comma-separated outbox row ids and/or event ids (UUIDs) of failed rows (required)")
	dryRun := fs.Bool("dry-run", false, "print what would be resolved; change nothing")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := f.resolve(time.Now()); err != nil {
		return err
	}
	if len(f.IDs) == 0 {
		return usageErr("failed resolve: --ids is required (the failed rows to close, by outbox row id or event id)")
	}
	if !*dryRun {
		if err := audit.require("failed resolve"); err != nil {
			return err
		}
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	q := outboxdb.New(pool)
	rows, err := selectRows(ctx, q, f, allStatuses, 0)
	if err != nil {
		return err
	}
	var refused []string
	for _, id := range unmatchedIDs(f, rows) {
		refused = append(refused, id+": no such outbox row")
	}
	ids := make([]int64, 0, len(rows))
	for _, r := range rows {
		if r.Status != "failed" {
			refused = append(refused, fmt.Sprintf("row %d (event %s) is %s, not failed", r.ID, r.EventID, r.Status))
		}
		ids = append(ids, r.ID)
	}
	if len(refused) > 0 {
		return problemErr("failed resolve: nothing changed; only failed rows can be resolved:\n  %s", strings.Join(refused, "\n  "))
	}
	behind, err := q.PendingBehind(ctx, ids)
	if err != nil {
		return fmt.Errorf("counting rows held back: %w", postgres.Classify(err))
	}
	printRows(c.stdout, rows, false)
	fmt.Fprintf(c.stdout, "resolve: %d failed row(s) -> resolved, never to be sent; %d pending row(s) of their aggregates held back behind them will be published\n", len(rows), behind)
	if *dryRun {
		fmt.Fprintln(c.stdout, "dry run: nothing changed")
		return nil
	}
	auditID, err := resolveRows(ctx, pool, ids, rows, audit)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "resolved %d row(s); audit row admin_audit.id=%d\n", len(rows), auditID)
	return nil
}

// resolveRows moves the rows to resolved and writes their audit row in one
// transaction; if any of them is no longer failed (replayed meanwhile),
// nothing changes.
func resolveRows(ctx context.Context, pool *pgxpool.Pool, ids []int64, rows []outboxRow, audit *auditFlags) (int64, error) {
	eventIDs := make([]string, len(rows))
	for i, r := range rows {
		eventIDs[i] = r.EventID.String()
	}
	var auditID int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		auditID, err = writeAudit(ctx, tx, "failed resolve", audit.by, audit.why, map[string]any{
			"row_ids": ids, "event_ids": eventIDs, "from_status": "failed", "to_status": "resolved", "outcome": "ok",
		})
		if err != nil {
			return err
		}
		q := outboxdb.New(tx)
		moved, err := q.ResolveFailedOutboxRows(ctx, outboxdb.ResolveFailedOutboxRowsParams{Ids: ids, AuditID: pgtype.Int8{Int64: auditID, Valid: true}})
		if err != nil {
			return fmt.Errorf("resolving rows: %w", postgres.Classify(err))
		}
		if len(moved) != len(ids) {
			return problemErr("%d of %d row(s) were no longer failed (replayed meanwhile?): nothing changed; look again with relayctl failed list", len(ids)-len(moved), len(ids))
		}
		return q.NotifyOutbox(ctx, outboxdb.NotifyOutboxParams{Always: true}) // the schema's channel, outbox.NotifyChannelFor
	})
	if err != nil {
		return 0, fmt.Errorf("resolving %d row(s): %w", len(ids), err)
	}
	return auditID, nil
}
