package command

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
)

// RedriveBy is the requested_by of the replays the automatic re-drive
// policy makes (outbox_replays).
const RedriveBy = "policy:auto-redrive"

// RedrivePolicy is the automatic re-drive of failures the environment
// caused: rows failed whose cause (the reason of their last error, kept in
// error_history next to the final error_reason) is one of Reasons are
// moved back to pending once their topic answers again, at most Rate rows
// per second, each batch recorded in outbox_replays as a replay by
// RedriveBy. A row failed as max_attempts_exceeded comes back when the
// error that spent its last attempt was, say, a timeout; a row whose cause
// is deterministic (the event's own fault) never does.
type RedrivePolicy struct {
	// Reasons switches the policy on per cause (transient or
	// environmental reasons only); empty: off.
	Reasons []string
	// Rate bounds the rows moved per second (default 10).
	Rate float64
	// Every is how often the policy looks (default 15s).
	Every time.Duration
}

// redrivable reports whether a failure caused by r may be re-driven by the
// policy: retrying may succeed (transient) or the cause is the
// environment's (a missing topic, a refused permission), never the event's.
func redrivable(r errclass.Reason) bool { return r.Transient() || r.Environmental() }

// causeSQL is a failed row's cause: its last error_history entry's reason
// (rows failed before the history was kept: error_reason).
const causeSQL = `coalesce(error_history->-1->>'reason', error_reason)`

func (p RedrivePolicy) enabled() bool { return len(p.Reasons) > 0 }

func (p *RedrivePolicy) validate() error {
	for _, r := range p.Reasons {
		switch reason := errclass.Reason(r); {
		case !reason.Valid():
			return usageErr("--redrive: unknown reason %q", r)
		case reason == errclass.MaxAttempts:
			return usageErr("--redrive: %s is a final reason, not a cause: the policy selects failed rows by the reason of their last error; list the causes to re-drive (e.g. unavailable,timeout,server_error,rate_limited)", r)
		case !redrivable(reason):
			return usageErr("--redrive: %s is a deterministic reason: retrying cannot help, the policy never re-drives it (replay it by hand after fixing the cause)", r)
		}
	}
	if p.Rate < 0 || p.Every < 0 {
		return usageErr("--redrive-rate and --redrive-every must be >= 0")
	}
	if p.Rate == 0 {
		p.Rate = 10
	}
	if p.Every == 0 {
		p.Every = 15 * time.Second
	}
	return nil
}

// String describes the policy for the console and logs.
func (p RedrivePolicy) String() string {
	if !p.enabled() {
		return "off"
	}
	return fmt.Sprintf("on for failures caused by %s, at most %g rows/s, every %s", strings.Join(p.Reasons, ", "), p.Rate, p.Every)
}

// redriver runs the policy.
type redriver struct {
	policy     RedrivePolicy
	pool       *pgxpool.Pool
	cli        *cli
	pubsubFile string
	// healthy reports whether topic answers again; nil: GetTopic on the
	// Pub/Sub of pubsubFile (or the environment) succeeds.
	healthy func(ctx context.Context, topic string) bool
	log     io.Writer
}

func (r *redriver) run(ctx context.Context) {
	t := time.NewTicker(r.policy.Every)
	defer t.Stop()
	for {
		if _, err := r.tick(ctx); err != nil && r.log != nil {
			fmt.Fprintf(r.log, "auto re-drive: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// tick re-drives at most Rate*Every rows, topic by topic, of the
// policy's causes whose topic answers; it returns how many moved.
func (r *redriver) tick(ctx context.Context) (int, error) {
	budget := int(math.Ceil(r.policy.Rate * r.policy.Every.Seconds()))
	rows, err := r.pool.Query(ctx, `SELECT `+causeSQL+`, topic FROM outbox_events
		WHERE status = 'failed' AND `+causeSQL+` = ANY($1) GROUP BY 1, 2 ORDER BY min(failed_at)`, r.policy.Reasons)
	if err != nil {
		return 0, fmt.Errorf("listing failed rows: %w", postgres.Classify(err))
	}
	type group struct{ cause, topic string }
	var groups []group
	for rows.Next() {
		var g group
		if err := rows.Scan(&g.cause, &g.topic); err != nil {
			rows.Close()
			return 0, err
		}
		groups = append(groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(groups) == 0 {
		return 0, err
	}
	healthy := r.healthy
	if healthy == nil {
		ps := &pubsubFlags{file: r.pubsubFile}
		client, cfg, _, err := ps.connect(ctx, r.cli)
		if err != nil {
			return 0, fmt.Errorf("Pub/Sub not reachable, nothing re-driven: %w", err)
		}
		defer client.Close()
		healthy = func(ctx context.Context, topic string) bool {
			pctx, cancel := context.WithTimeout(ctx, r.cli.connectTimeout)
			defer cancel()
			return gpubsub.Probe(pctx, client, cfg.ProjectID, topic) == nil
		}
	}
	verdict := map[string]bool{}
	moved := 0
	for _, g := range groups {
		if budget-moved <= 0 {
			break
		}
		ok, seen := verdict[g.topic]
		if !seen {
			ok = healthy(ctx, g.topic)
			verdict[g.topic] = ok
		}
		if !ok {
			continue
		}
		f := &rowFilter{Cause: g.cause, Topic: g.topic, Limit: budget - moved}
		rp := &replayer{pool: r.pool, f: f, statuses: []string{"failed"}, by: RedriveBy,
			why:   fmt.Sprintf("automatic re-drive: the rows failed for %s (transient or environmental) and topic %s answers again", g.cause, g.topic),
			batch: max(1, min(500, int(r.policy.Rate))), rate: r.policy.Rate}
		n, err := rp.run(ctx, func([]outboxRow) {})
		moved += len(n)
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// redriveSummary is what status and the console show of the policy's work.
type redriveSummary struct {
	Replays int64      `json:"replays_24h"`
	Rows    int64      `json:"rows_24h"`
	Last    *time.Time `json:"last,omitempty"`
	Reasons []string   `json:"reasons,omitempty"`
}

// lastRedrives summarizes the policy's replays of the last 24 hours.
func lastRedrives(ctx context.Context, pool *pgxpool.Pool) (redriveSummary, error) {
	var s redriveSummary
	var reasons []string
	err := pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(row_count), 0), max(created_at),
		coalesce(array_agg(DISTINCT coalesce(filter->>'cause', filter->>'reason')) FILTER (WHERE filter ?| '{cause,reason}'), '{}')
		FROM outbox_replays WHERE requested_by = $1 AND created_at > now() - interval '24 hours'`, RedriveBy).Scan(&s.Replays, &s.Rows, &s.Last, &reasons)
	if err != nil {
		return s, fmt.Errorf("reading the policy's replays: %w", postgres.Classify(err))
	}
	sort.Strings(reasons)
	s.Reasons = slices.Compact(reasons)
	return s, nil
}
