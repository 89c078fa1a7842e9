package bench

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// sqlStatements reads pg_stat_statements for the bench database: one row
// per statement (top level), its query text and cumulative figures.
const sqlStatements = `SELECT queryid, query, calls, total_exec_time, shared_blks_hit + shared_blks_read, wal_bytes::float8
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND toplevel`

// statementFigures are one statement's cumulative pg_stat_statements
// figures.
type statementFigures struct {
	name    string
	sqlc    bool // name is sqlc's
	calls   float64
	totalMs float64
	buffers float64 // shared blocks hit + read
	wal     float64 // bytes
}

// statementSnapshot holds every statement's figures at one moment, by
// queryid; nil when the server does not load pg_stat_statements.
type statementSnapshot map[int64]statementFigures

// sqlcName finds the name sqlc gives a query in its first line.
var sqlcName = regexp.MustCompile(`^-- name: (\w+)`)

// statementName is a statement's sqlc name (sqlc true), or its first
// words.
func statementName(query string) (name string, sqlc bool) {
	if m := sqlcName.FindStringSubmatch(query); m != nil {
		return m[1], true
	}
	s := strings.Join(strings.Fields(query), " ")
	if len(s) > 48 {
		s = s[:48] + "…"
	}
	return s, false
}

// statementsLoaded says whether the server loads pg_stat_statements
// (scripts/pg.sh preloads it when Postgres has it), creating the
// extension's view in the bench database if needed. why says what is
// missing.
func (d *DB) statementsLoaded(ctx context.Context) (ok bool, why string) {
	if _, err := d.Pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false, fmt.Sprintf("pg_stat_statements is not installed (%v)", err)
	}
	if _, err := d.Pool.Exec(ctx, `SELECT 1 FROM pg_stat_statements LIMIT 1`); err != nil {
		return false, fmt.Sprintf("pg_stat_statements is not loaded (shared_preload_libraries): %v", err)
	}
	return true, ""
}

// statements reads the bench database's statement figures.
func (d *DB) statements(ctx context.Context) (statementSnapshot, error) {
	rows, err := d.Pool.Query(ctx, sqlStatements)
	if err != nil {
		return nil, fmt.Errorf("reading pg_stat_statements: %w", err)
	}
	defer rows.Close()
	snap := statementSnapshot{}
	for rows.Next() {
		var (
			id    int64
			query string
			f     statementFigures
			calls int64
			blks  int64
		)
		if err := rows.Scan(&id, &query, &calls, &f.totalMs, &blks, &f.wal); err != nil {
			return nil, fmt.Errorf("reading pg_stat_statements: %w", err)
		}
		f.name, f.sqlc = statementName(query)
		f.calls, f.buffers = float64(calls), float64(blks)
		snap[id] = f
	}
	return snap, rows.Err()
}

// since returns what each statement did between before and s, summed by
// name, the busiest (total time) first; statements not called are left
// out.
func (s statementSnapshot) since(before statementSnapshot) []statementFigures {
	byName := map[string]statementFigures{}
	for id, f := range s {
		b := before[id] // zero: the statement was first run in between
		if f.calls-b.calls <= 0 {
			continue
		}
		t := byName[f.name]
		t.name, t.sqlc = f.name, f.sqlc
		t.calls += f.calls - b.calls
		t.totalMs += f.totalMs - b.totalMs
		t.buffers += f.buffers - b.buffers
		t.wal += f.wal - b.wal
		byName[f.name] = t
	}
	out := make([]statementFigures, 0, len(byName))
	for _, f := range byName {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b statementFigures) int {
		switch {
		case a.totalMs > b.totalMs:
			return -1
		case a.totalMs < b.totalMs:
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// statementsPivot is the cost scenario's per-statement table: one row per
// step and sqlc statement.
var statementsPivot = pivot{"statements", "Statements of the cost scenario's steps (pg_stat_statements, top level, sqlc's names; " +
	"buffers: shared blocks hit + read; times are the server's execution times, which a busy machine stretches, the buffers " +
	"and WAL do not); medians of the runs:",
	[]string{"Step: statement", "Calls / 1k events", "Mean ms", "Buffers / call", "Buffers / event", "WAL B / call", "WAL B / event"},
	[]string{"calls-per-1k", "mean-ms", "buffers-per-call", "buffers-per-event", "wal-per-call", "wal-per-event"}}

// recordStatements adds a step's per-statement figures (the sqlc
// statements that ran at least once per 1,000 events or read half a
// buffer or wrote a WAL byte per event) and logs the busiest statements,
// named or not; events is how many events the step committed.
func (r *Runner) recordStatements(idPrefix, group string, events float64, figs []statementFigures) {
	if events <= 0 {
		return
	}
	for i, f := range figs {
		if i < 12 {
			r.logf("    %s: %.0f calls, mean %.3f ms, %.0f buffers and %.0f WAL bytes per call; per event %.1f buffers, %.0f WAL bytes",
				f.name, f.calls, f.totalMs/f.calls, f.buffers/f.calls, f.wal/f.calls, f.buffers/events, f.wal/events)
		}
		// The table keeps the statements that weigh: the rare ones
		// (membership, maintenance) are in the log.
		if !f.sqlc || (f.calls/events*1000 < 1 && f.buffers/events < 0.5 && f.wal/events < 1) {
			continue
		}
		g := group + ": " + f.name
		add := func(metric, unit string, v float64) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return
			}
			r.addRun(Measurement{ID: idPrefix + "stmt." + f.name + "." + metric, Scenario: "statements", Name: g + ": " + metric,
				Group: g, Metric: metric, Unit: unit}, v)
		}
		add("calls-per-1k", "calls", f.calls/events*1000)
		add("mean-ms", "ms", f.totalMs/f.calls)
		add("buffers-per-call", "buffers", f.buffers/f.calls)
		add("buffers-per-event", "buffers", f.buffers/events)
		add("wal-per-call", "bytes", f.wal/f.calls)
		add("wal-per-event", "bytes", f.wal/events)
	}
}
