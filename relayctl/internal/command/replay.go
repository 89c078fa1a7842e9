package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

const replayUsage = `
replay [filters] [--include-published] [--include-resolved] (--dry-run | --by WHO --why WHY) [--rate N]

Moves outbox rows back to pending so the publisher sends them again:
failed rows by default; --include-published also re-drives published rows
(to rebuild a projection from the outbox; the log mode leaves the rows it
published pending: those inserted below every slot's published horizon, as
its retention counts them); --include-resolved also sends
rows closed with "failed resolve" (never selected otherwise: they were
meant never to be sent). At least one filter, or --all, is required.

--dry-run prints exactly the rows that match and changes nothing. A real run
requires --by and --why, prints what it will do, then per row: status
pending (ready at once), attempts 0, claim cleared, replay_count + 1;
error_history, last_error and error_reason are kept. One outbox_replays audit
row (who, why, filter, event ids) is written in the same transaction as the
rows it covers. --rate N moves at most N rows per second, in transactions of
at most --batch rows; the single audit row grows with each batch.

Publishers are woken with NOTIFY on commit.`

func runReplay(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "replay", replayUsage)
	db := addDBFlags(c, fs)
	f := addRowFilterFlags(fs, 0)
	audit := addAuditFlags(fs)
	all := fs.Bool("all", false, "select every row in the statuses (no filter)")
	published := fs.Bool("include-published", false, "also replay published rows (re-drive projections)")
	resolved := fs.Bool("include-resolved", false, "also replay resolved rows (closed by failed resolve as never to be sent)")
	dryRun := fs.Bool("dry-run", false, "print the rows that would move; change nothing")
	rate := fs.Float64("rate", 0, "at most N rows per second (0: no limit)")
	batch := fs.Int("batch", 500, "rows per transaction")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := f.resolve(time.Now()); err != nil {
		return err
	}
	switch {
	case f.empty() && !*all:
		return usageErr("replay: give a filter (--ids, --reason, --topic, --aggregate-type, --aggregate, --since/--until) or --all")
	case !f.empty() && *all:
		return usageErr("replay: --all selects every row; it contradicts the filter flags (--ids, --reason, --topic, --aggregate-type, --aggregate, --since/--until): give one or the other")
	case *batch < 1:
		return usageErr("--batch must be >= 1")
	case *rate < 0:
		return usageErr("--rate must be >= 0")
	}
	if !*dryRun {
		if err := audit.require("replay"); err != nil {
			return err
		}
	}
	statuses := []string{"failed"}
	if *published {
		statuses = append(statuses, "published")
	}
	if *resolved {
		statuses = append(statuses, "resolved")
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()

	if *dryRun {
		rows, err := selectRows(ctx, outboxdb.New(pool), f, statuses, f.Limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c.stdout, rows)
		}
		printRows(c.stdout, rows, false)
		fmt.Fprintf(c.stdout, "dry run: %d row(s) in status %s would move to pending; nothing changed\n", len(rows), strings.Join(statuses, "|"))
		warnUnmatched(c, f, rows)
		return nil
	}

	r := &replayer{pool: pool, f: f, statuses: statuses, by: audit.by, why: audit.why, batch: *batch, rate: *rate}
	if *rate > 0 && float64(r.batch) > *rate {
		r.batch = max(1, int(*rate))
	}
	fmt.Fprintf(c.stderr, "replay: moving rows in status %s matching %s to pending (by %q, why %q)\n",
		strings.Join(statuses, "|"), f.json(), audit.by, audit.why)
	moved, err := r.run(ctx, func(rows []outboxRow) {
		if !*asJSON {
			for _, row := range rows {
				fmt.Fprintf(c.stdout, "replayed %d %s %s/%s v%d (%s, replay #%d)\n", row.ID, row.EventID,
					row.AggregateType, row.AggregateID, row.AggregateVersion, row.Status, row.ReplayCount+1)
			}
		}
	})
	if *asJSON {
		if jerr := writeJSON(c.stdout, map[string]any{"audit_id": r.auditID, "rows": nonNil(moved)}); jerr != nil && err == nil {
			err = jerr
		}
	} else if err == nil && len(moved) == 0 {
		fmt.Fprintln(c.stdout, "replayed 0 row(s): nothing matched, no audit row written")
	} else if err == nil {
		fmt.Fprintf(c.stdout, "replayed %d row(s); audit row outbox_replays.id=%d\n", len(moved), r.auditID)
	}
	warnUnmatched(c, f, moved)
	return err
}

func warnUnmatched(c *cli, f *rowFilter, rows []outboxRow) {
	for _, id := range unmatchedIDs(f, rows) {
		fmt.Fprintf(c.stderr, "replay: %s did not match (unknown, not in the selected statuses — resolved rows need --include-resolved — or filtered out)\n", id)
	}
}

// unmatchedIDs are the --ids that name none of rows.
func unmatchedIDs(f *rowFilter, rows []outboxRow) []string {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[fmt.Sprint(r.ID)] = true
		seen[r.EventID.String()] = true
	}
	var out []string
	for _, id := range f.IDs {
		if !seen[strings.ToLower(id)] {
			out = append(out, id)
		}
	}
	return out
}

// replayer moves matching rows in bounded transactions, each with its share
// of the one audit row.
type replayer struct {
	pool     *pgxpool.Pool
	f        *rowFilter
	statuses []string
	by, why  string
	batch    int
	rate     float64
	auditID  int64
}

func (r *replayer) run(ctx context.Context, progress func([]outboxRow)) ([]outboxRow, error) {
	var moved []outboxRow
	var after int64
	start := time.Now()
	for {
		n := r.batch
		if r.f.Limit > 0 {
			n = min(n, r.f.Limit-len(moved))
		}
		if n <= 0 {
			return moved, nil
		}
		rows, last, err := r.batchTx(ctx, after, n)
		if err != nil {
			return moved, err
		}
		if last == 0 {
			return moved, nil
		}
		after = last
		moved = append(moved, rows...)
		progress(rows)
		if r.rate > 0 {
			due := start.Add(time.Duration(float64(len(moved)) / r.rate * float64(time.Second)))
			select {
			case <-ctx.Done():
				return moved, fmt.Errorf("replay interrupted after %d rows: %w", len(moved), ctx.Err())
			case <-time.After(time.Until(due)):
			}
		}
	}
}

// batchTx replays up to n rows after id after in one transaction. last is
// the highest id selected (0: nothing left).
func (r *replayer) batchTx(ctx context.Context, after int64, n int) (rows []outboxRow, last int64, err error) {
	auditID := r.auditID
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		q := outboxdb.New(tx)
		sel, err := selectRows(ctx, q, r.f, r.statuses, n)
		if err != nil || len(sel) == 0 {
			return err
		}
		last = sel[len(sel)-1].ID
		byID := make(map[int64]outboxRow, len(sel))
		ids := make([]int64, len(sel))
		for i, s := range sel {
			ids[i], byID[s.ID] = s.ID, s
		}
		upd, err := q.ReplayOutboxRows(ctx, outboxdb.ReplayOutboxRowsParams{Ids: ids, Statuses: r.statuses})
		if err != nil {
			return fmt.Errorf("replaying rows: %w", postgres.Classify(err))
		}
		if len(upd) == 0 {
			return nil
		}
		eventIDs := make([]uuid.UUID, len(upd))
		for i, u := range upd {
			eventIDs[i] = u.EventID
			rows = append(rows, byID[u.ID])
		}
		if auditID, err = r.audit(ctx, q, auditID, eventIDs); err != nil {
			return err
		}
		return q.NotifyOutbox(ctx, outboxdb.NotifyOutboxParams{Always: true}) // the schema's channel, outbox.NotifyChannelFor
	})
	if err != nil {
		return nil, 0, fmt.Errorf("replay batch after row %d: %w", after, postgres.Classify(err))
	}
	r.auditID = auditID // committed
	return rows, last, nil
}

// audit writes the replay's audit row (id 0) or adds to it, in q's tx.
func (r *replayer) audit(ctx context.Context, q *outboxdb.Queries, id int64, eventIDs []uuid.UUID) (int64, error) {
	if id != 0 {
		err := q.ExtendReplayAudit(ctx, outboxdb.ExtendReplayAuditParams{ID: id, RowCount: int32(len(eventIDs)), EventIds: eventIDs})
		if err != nil {
			return 0, fmt.Errorf("extending outbox_replays row %d: %w", id, err)
		}
		return id, nil
	}
	row, err := q.InsertReplayAudit(ctx, outboxdb.InsertReplayAuditParams{
		RequestedBy: r.by, Reason: r.why, Filter: r.f.json(), FromStatus: strings.Join(r.statuses, ","),
		RowCount: int32(len(eventIDs)), EventIds: eventIDs,
	})
	if err != nil {
		return 0, fmt.Errorf("writing outbox_replays row: %w", err)
	}
	return row.ID, nil
}
