package command

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// rebuildSelection is what `rebuild --projection` replays and its plan
// counts: every published row, the rows the log mode published (left
// pending below every slot's horizon) among them.
func rebuildSelection() (*rowFilter, []string) { return &rowFilter{}, []string{"published"} }

// projectionPlan is what `rebuild --projection` empties and replays.
type projectionPlan struct {
	hook.Projection
	// Rows are the rows of each table, Inbox the consumer's inbox rows,
	// Published the outbox rows replayed (rebuildSelection) and Oldest
	// the oldest of them.
	// Gone counts the events the projection applied that the outbox no
	// longer holds (retention deleted them): the replay cannot bring them
	// back.
	Rows      map[string]int64
	Inbox     int64
	Published int64
	Oldest    time.Time
	Gone      int64
}

// findProjection is the projection named name among the hooks', or
// declared by --tables.
func findProjection(hooks []hook.Projection, name, tables string) (hook.Projection, error) {
	p := hook.Projection{Name: name, Consumer: name}
	if i := slices.IndexFunc(hooks, func(h hook.Projection) bool { return h.Name == name }); i >= 0 {
		p = hooks[i]
		if p.Consumer == "" {
			p.Consumer = p.Name
		}
	}
	for _, t := range strings.Split(tables, ",") {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(p.Tables, t) {
			p.Tables = append(p.Tables, t)
		}
	}
	if len(p.Tables) == 0 {
		known := make([]string, 0, len(hooks))
		for _, h := range hooks {
			known = append(known, h.Name)
		}
		return p, usageErr("rebuild --projection %q: no tables to empty: this binary's projections are [%s]; name the read model's tables with --tables",
			name, strings.Join(known, ", "))
	}
	return p, nil
}

// planProjection counts what the rebuild of p empties and replays.
func planProjection(ctx context.Context, tx pgx.Tx, p hook.Projection) (projectionPlan, error) {
	plan := projectionPlan{Projection: p, Rows: map[string]int64{}}
	for _, t := range p.Tables {
		var n int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{t}.Sanitize()).Scan(&n); err != nil {
			return plan, fmt.Errorf("counting table %s of projection %s: %w", t, p.Name, postgres.Classify(err))
		}
		plan.Rows[t] = n
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM inbox_events WHERE consumer = $1", p.Consumer).Scan(&plan.Inbox); err != nil {
		return plan, fmt.Errorf("counting the inbox rows of %s: %w", p.Consumer, postgres.Classify(err))
	}
	filter, statuses := rebuildSelection()
	err := eachRow(ctx, outboxdb.New(tx), filter, statuses, 0, func(r outboxRow) {
		if plan.Published++; plan.Oldest.IsZero() || r.CreatedAt.Before(plan.Oldest) {
			plan.Oldest = r.CreatedAt
		}
	})
	if err != nil {
		return plan, fmt.Errorf("counting the outbox rows to replay: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM inbox_events i WHERE i.consumer = $1
		AND NOT EXISTS (SELECT 1 FROM outbox_events o WHERE o.event_id = i.event_id)`, p.Consumer).Scan(&plan.Gone); err != nil {
		return plan, fmt.Errorf("counting the events of %s the outbox no longer holds: %w", p.Consumer, postgres.Classify(err))
	}
	return plan, nil
}

func (p projectionPlan) print(c *cli) {
	tables := make([]string, 0, len(p.Tables))
	for _, t := range p.Tables {
		tables = append(tables, fmt.Sprintf("%s (%d rows)", t, p.Rows[t]))
	}
	fmt.Fprintf(c.stdout, "rebuild plan: empty %s and delete %d inbox row(s) of consumer %s in one transaction,\n",
		strings.Join(tables, ", "), p.Inbox, p.Consumer)
	fmt.Fprintf(c.stdout, "rebuild plan: then replay %d published outbox row(s)", p.Published)
	if p.Published > 0 {
		fmt.Fprintf(c.stdout, " (oldest %s)", p.Oldest.UTC().Format(time.RFC3339))
	}
	if p.Gone > 0 {
		fmt.Fprintf(c.stdout, ";\nrebuild plan: %d event(s) the projection applied are no longer in the outbox (retention deleted them) and will not be replayed: restate them with `relayctl rebuild`", p.Gone)
	}
	fmt.Fprintln(c.stdout, "; every subscription of their topics receives them again, other projections absorb them as duplicates")
}

// rebuildProjection empties projection name's tables and inbox rows and
// replays the published outbox rows, audited in admin_audit (and the
// replay in outbox_replays).
func rebuildProjection(ctx context.Context, c *cli, db *dbFlags, audit *auditFlags, name, tables string, dryRun bool, batch int) error {
	p, err := findProjection(c.hooks.Projections, name, tables)
	if err != nil {
		return err
	}
	if !dryRun {
		if err := audit.require("rebuild"); err != nil {
			return err
		}
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var plan projectionPlan
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		plan, err = planProjection(ctx, tx, p)
		return err
	})
	if err != nil {
		return err
	}
	plan.print(c)
	if dryRun {
		fmt.Fprintln(c.stdout, "dry run: nothing changed")
		return nil
	}
	rec, err := startAudit(ctx, pool, "rebuild", audit.by, audit.why, map[string]any{
		"projection": p.Name, "consumer": p.Consumer, "tables": plan.Rows, "inbox_rows": plan.Inbox, "published_rows": plan.Published,
	})
	if err != nil {
		return err
	}
	var replayed int
	err = func() error {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, t := range p.Tables {
				if _, err := tx.Exec(ctx, "DELETE FROM "+pgx.Identifier{t}.Sanitize()); err != nil {
					return fmt.Errorf("emptying %s: %w", t, err)
				}
			}
			if _, err := tx.Exec(ctx, "DELETE FROM inbox_events WHERE consumer = $1", p.Consumer); err != nil {
				return fmt.Errorf("deleting the inbox rows of %s: %w", p.Consumer, err)
			}
			return nil
		})
		if err != nil {
			return postgres.Classify(err)
		}
		fmt.Fprintf(c.stdout, "emptied %s and the inbox of %s\n", strings.Join(p.Tables, ", "), p.Consumer)
		filter, statuses := rebuildSelection()
		r := &replayer{pool: pool, f: filter, statuses: statuses, by: audit.by,
			why: "rebuild --projection " + p.Name + ": " + audit.why, batch: batch}
		moved, err := r.run(ctx, func([]outboxRow) {})
		replayed = len(moved)
		if err == nil {
			fmt.Fprintf(c.stdout, "replayed %d row(s); audit row outbox_replays.id=%d\n", replayed, r.auditID)
		}
		return err
	}()
	return rec.finishWith(ctx, err, map[string]any{"replayed_rows": replayed})
}
