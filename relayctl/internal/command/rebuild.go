package command

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

const rebuildUsage = `
rebuild (--dry-run | --by WHO --why WHY) [--ids ID,...] [--batch N] [--reindex]
rebuild --projection NAME [--tables T,...] (--dry-run | --by WHO --why WHY)

Re-emits the full current state of every aggregate of the service's source
of truth (deleted ones included, as tombstones) through the outbox, so
every projection converges: one restatement event per aggregate at its
current version with a new event id (origin 'rebuild'), built by the
service's Rebuilder hook (e.g. a created event for a live aggregate at
version 1, an updated event carrying its whole state for later versions, a
deleted event for a deleted aggregate). Projections apply it only if
they hold an older version or nothing (after a truncate); a projection row
at the same version is left alone, so delete a hand-edited row before
restating it (--ids).

Rows are read in pages of --batch FOR SHARE and restated in the same
transaction: bounded transactions, and each restatement carries the version
the row had at that moment. Publishers are woken with NOTIFY. Recorded in
admin_audit.

--reindex additionally rebuilds an external read model (e.g. a search
index) through the service's Reindexer hook, which says in the plan what it
will do; run it once the read model it is built from has converged
(relayctl verify).

--projection rebuilds one projection from the outbox: in one transaction
it empties the projection's tables (declared by the binary, e.g. a
service's embedded.Options.Projections, or --tables) and deletes its inbox
rows, then moves every published outbox row back to pending (as replay
--include-published --all, in outbox_replays): the projection applies them
again from scratch, other projections absorb them as duplicates. The dry
run prints the counts; events the outbox has pruned are not replayed
(rebuild without --projection restates the current state).`

func runRebuild(ctx context.Context, c *cli, args []string) error {
	rb, rx := c.hooks.Rebuilder, c.hooks.Reindexer
	fs := newFlags(c, "rebuild", rebuildUsage)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	hf := addHookFlags(c, fs, rb, rx)
	var subject hook.Subject
	if rb != nil {
		subject = rb.Subject()
	}
	ids := fs.String("ids", "", "only these aggregate ids (comma-separated)")
	batch := fs.Int("batch", 500, "aggregates per transaction")
	topic := fs.String("topic", subject.Topic, "topic of every restatement event; empty: each event's own (envelope's Codec.Event sets it)")
	dryRun := fs.Bool("dry-run", false, "count what would be restated; change nothing")
	reindex := fs.Bool("reindex", false, "also rebuild the external read model through the service's Reindexer hook (the plan says what it does)")
	restate := fs.Bool("restate", true, "emit restatement events (--restate=false with --reindex: only reindex)")
	projection := fs.String("projection", "", "rebuild this projection alone: empty its tables and inbox rows, replay the published outbox rows")
	tables := fs.String("tables", "", "with --projection: its read-model tables (comma-separated), when the binary does not declare them")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if *projection != "" {
		if *ids != "" || *reindex {
			return usageErr("rebuild --projection replays every published event into one projection: it takes neither --ids nor --reindex")
		}
		return rebuildProjection(ctx, c, db, audit, *projection, *tables, *dryRun, *batch)
	}
	switch {
	case *restate && rb == nil:
		return noHook("rebuild", "Rebuilder", "source rows to restatement events")
	case *reindex && rx == nil:
		return noHook("rebuild --reindex", "Reindexer", "rebuilding an external read model")
	case *batch < 1:
		return usageErr("--batch must be >= 1")
	case !*restate && !*reindex:
		return usageErr("rebuild: --restate=false leaves nothing to do without --reindex")
	}
	if *restate && *topic != "" {
		if err := contract.CheckTopicID(*topic); err != nil {
			return usageErr("--topic: %v", err)
		}
	}
	var only []string
	for _, s := range strings.Split(*ids, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if rb != nil {
			if err := rb.CheckID(s); err != nil {
				return usageErr("--ids: %v", err)
			}
		}
		only = append(only, s)
	}
	env := hf.env()
	var reindexPlan string
	if *reindex {
		plan, err := rx.Plan(env)
		if err != nil {
			return err
		}
		reindexPlan = plan
	}
	if !*dryRun {
		if err := audit.require("rebuild"); err != nil {
			return err
		}
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	var n hook.Count
	if *restate {
		err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			var err error
			n, err = rb.Count(ctx, tx, nonNil(only))
			return err
		})
		if err != nil {
			return fmt.Errorf("counting %ss: %w", subject.Noun, postgres.Classify(err))
		}
	}
	// The plan, printed the same way by a dry run and a real run: a dry run
	// shows exactly what the run does.
	if *restate {
		to := *topic
		if to == "" {
			to = "the topic each event declares"
		}
		fmt.Fprintf(c.stdout, "rebuild plan: restate %d %s(s) (%d deleted, as %s) to %s in transactions of %d\n", n.Total, subject.Noun, n.Deleted, subject.Tombstone, to, *batch)
	}
	if *reindex {
		fmt.Fprintf(c.stdout, "rebuild plan: %s\n", reindexPlan)
	}
	if *dryRun {
		fmt.Fprintln(c.stdout, "dry run: nothing changed")
		return nil
	}
	rec, err := startAudit(ctx, pool, "rebuild", audit.by, audit.why, map[string]any{
		"noun": subject.Noun, "aggregates": n.Total, "deleted": n.Deleted, "ids": *ids, "topic": *topic,
		"restate": *restate, "reindex": *reindex, "settings": hf.audit(),
	})
	if err != nil {
		return err
	}
	err = func() error {
		if *restate {
			if err := restateAll(ctx, c, pool, rb, n.Total, nonNil(only), *topic, *batch); err != nil {
				return err
			}
		}
		if *reindex {
			return rx.Reindex(ctx, pool, env)
		}
		return nil
	}()
	return rec.finish(ctx, err)
}

// restateAll writes one restatement per aggregate, a page per transaction:
// to topic, or ("") to each event's own.
func restateAll(ctx context.Context, c *cli, pool *pgxpool.Pool, rb hook.Rebuilder, count int64, only []string, topic string, batch int) error {
	subject := rb.Subject()
	w, err := outbox.NewWriter(outbox.Config{
		Encoder: subject.Encoder, Notify: true,
		Producer: outbox.Producer{Service: "relayctl", Instance: "rebuild"},
	})
	if err != nil {
		return fmt.Errorf("the rebuilder's outbox writer (hook.Subject.Encoder): %w", err)
	}
	start := time.Now()
	after := ""
	total := 0
	for {
		var page int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			evs, err := rb.Restate(ctx, tx, after, only, batch)
			if err != nil {
				return fmt.Errorf("reading %ss after %q: %w", subject.Noun, after, postgres.Classify(err))
			}
			if topic != "" {
				for i := range evs {
					evs[i].Topic = topic
				}
			}
			if _, err := w.InsertTx(ctx, tx, evs...); err != nil {
				return fmt.Errorf("writing restatements: %w", postgres.Classify(err))
			}
			page = len(evs)
			if page > 0 {
				after = evs[page-1].AggregateID
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("rebuild stopped after %d restatement(s) (committed; rerunning is safe): %w", total, err)
		}
		total += page
		if page < batch {
			break
		}
		fmt.Fprintf(c.stderr, "rebuild: %d/%d restated\n", total, count)
	}
	fmt.Fprintf(c.stdout, "restated %d %s(s) in %s; the publisher sends them, projections apply what they miss\n", total, subject.Noun, time.Since(start).Round(time.Millisecond))
	return nil
}
