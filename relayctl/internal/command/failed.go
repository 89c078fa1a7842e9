package command

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

const failedUsage = `
failed list [filters] [--history] [--json] | resolve --ids ... (--dry-run | --by WHO --why WHY)

Lists failed outbox rows (terminal: the publisher never retries them; see
"relayctl replay"), oldest first, with attempts, error reason, last error
and (with --history or --json) the error history.

Exit 1 when failed rows match, 0 when none do. "failed resolve" closes
failed rows that must never be sent (see relayctl failed resolve --help).`

func runFailed(ctx context.Context, c *cli, args []string) error {
	return group(ctx, c, "failed list|resolve", failedUsage, map[string]func(context.Context, *cli, []string) error{
		"list":    failedList,
		"resolve": failedResolve,
	}, args)
}

func failedList(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "failed list", failedUsage)
	db := addDBFlags(c, fs)
	f := addRowFilterFlags(fs, 100)
	history := fs.Bool("history", false, "print each row's error history")
	asJSON := fs.Bool("json", false, "print JSON (one array of rows)")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if err := f.resolve(time.Now()); err != nil {
		return err
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rows, err := selectRows(ctx, outboxdb.New(pool), f, []string{"failed"}, f.Limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(c.stdout, rows); err != nil {
			return err
		}
	} else {
		printRows(c.stdout, rows, *history)
	}
	if len(rows) > 0 {
		return &exitError{code: ExitProblem, err: fmt.Errorf("%d failed row(s) match", len(rows))}
	}
	return nil
}

// outboxRow is one outbox row as the CLI shows it.
type outboxRow struct {
	ID               int64           `json:"id"`
	EventID          uuid.UUID       `json:"event_id"`
	AggregateType    string          `json:"aggregate_type"`
	AggregateID      string          `json:"aggregate_id"`
	AggregateVersion int64           `json:"aggregate_version"`
	EventType        string          `json:"event_type"`
	Topic            string          `json:"topic"`
	Status           string          `json:"status"`
	Origin           string          `json:"origin"`
	Attempts         int32           `json:"attempts"`
	ReplayCount      int32           `json:"replay_count"`
	ErrorReason      string          `json:"error_reason,omitempty"`
	LastError        string          `json:"last_error,omitempty"`
	ErrorHistory     json.RawMessage `json:"error_history"`
	CreatedAt        time.Time       `json:"created_at"`
	FailedAt         *time.Time      `json:"failed_at,omitempty"`
	PublishedAt      *time.Time      `json:"published_at,omitempty"`
	ResolvedAt       *time.Time      `json:"resolved_at,omitempty"`
}

// selectRows pages through SelectOutboxRows until limit rows (0: all).
func selectRows(ctx context.Context, q *outboxdb.Queries, f *rowFilter, statuses []string, limit int) ([]outboxRow, error) {
	var out []outboxRow
	err := eachRow(ctx, q, f, statuses, limit, func(r outboxRow) { out = append(out, r) })
	return out, err
}

// eachRow calls fn with each row SelectOutboxRows selects, page after
// page, until limit rows (0: all).
func eachRow(ctx context.Context, q *outboxdb.Queries, f *rowFilter, statuses []string, limit int, fn func(outboxRow)) error {
	var after int64
	seen := 0
	for {
		page := 1000
		if limit > 0 && limit-seen < page {
			page = limit - seen
		}
		if page == 0 {
			return nil
		}
		rs, err := q.SelectOutboxRows(ctx, f.params(statuses, after, page))
		if err != nil {
			return fmt.Errorf("selecting outbox rows: %w", postgres.Classify(err))
		}
		for _, r := range rs {
			row := outboxRow{
				ID: r.ID, EventID: r.EventID, AggregateType: r.AggregateType, AggregateID: r.AggregateID,
				AggregateVersion: r.AggregateVersion, EventType: r.EventType, Topic: r.Topic, Status: r.Status,
				Origin: r.Origin, Attempts: r.Attempts, ReplayCount: r.ReplayCount, ErrorReason: r.ErrorReason.String,
				LastError: r.LastError.String, ErrorHistory: r.ErrorHistory, CreatedAt: r.CreatedAt,
			}
			if r.FailedAt.Valid {
				row.FailedAt = &r.FailedAt.Time
			}
			if r.PublishedAt.Valid {
				row.PublishedAt = &r.PublishedAt.Time
			}
			if r.ResolvedAt.Valid {
				row.ResolvedAt = &r.ResolvedAt.Time
			}
			fn(row)
			after = r.ID
		}
		seen += len(rs)
		if len(rs) < page {
			return nil
		}
	}
}

func printRows(w io.Writer, rows []outboxRow, history bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEVENT_ID\tAGGREGATE\tVERSION\tEVENT_TYPE\tSTATUS\tATTEMPTS\tREPLAYS\tREASON\tWHEN\tLAST_ERROR")
	for _, r := range rows {
		when := r.CreatedAt
		if r.FailedAt != nil {
			when = *r.FailedAt
		} else if r.PublishedAt != nil {
			when = *r.PublishedAt
		}
		fmt.Fprintf(tw, "%d\t%s\t%s/%s\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n",
			r.ID, r.EventID, r.AggregateType, r.AggregateID, r.AggregateVersion, r.EventType, r.Status,
			r.Attempts, r.ReplayCount, dash(r.ErrorReason), when.UTC().Format(time.RFC3339), oneLine(r.LastError, 100))
	}
	tw.Flush()
	if !history {
		return
	}
	for _, r := range rows {
		var entries []map[string]any
		_ = json.Unmarshal(r.ErrorHistory, &entries)
		fmt.Fprintf(w, "\nrow %d (%s) error history, %d entr(ies):\n", r.ID, r.EventID, len(entries))
		for _, e := range entries {
			fmt.Fprintf(w, "  %v attempt=%v reason=%v worker=%v: %s\n", e["at"], e["attempt"], e["reason"], e["worker"], oneLine(fmt.Sprint(e["error"]), 200))
		}
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-3] + "..."
	}
	return dash(s)
}
