package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventrelay/eventrelay/cmd/publisher/config"
	"github.com/eventrelay/eventrelay/relay"
)

// runScale pushes a wave through the outbox and measures claim latency
// and the table's and indexes' sizes at each phase: before the wave (the
// smallest pending count), while it grows to the largest (its peak), after
// it was published, after retention deleted it, after VACUUM, and after the
// publisher's index upkeep (maintainOutboxIndexes) ran.
func runScale(ctx context.Context, r *Runner) error {
	cfg := r.cfg
	if err := r.db.reset(ctx); err != nil {
		return err
	}
	fx := NewFixture(cfg.Aggregates)
	pending := 0
	for i, size := range cfg.ScaleSizes {
		r.logf("  seeding to %d pending rows", size)
		if err := fx.Seed(ctx, r.db, size-pending); err != nil {
			return err
		}
		pending = size
		if err := analyze(ctx, r.db); err != nil {
			return err
		}
		if err := r.claimLatency(ctx, size, strconv.Itoa(size)+" pending", "n"+strconv.Itoa(size)); err != nil {
			return err
		}
		label, id := fmt.Sprintf("wave at %d pending", size), "n"+strconv.Itoa(size)
		switch i {
		case 0:
			label, id = fmt.Sprintf("before the wave (%d pending)", size), "before"
		case len(cfg.ScaleSizes) - 1:
			label, id = fmt.Sprintf("peak of the wave (%d pending)", size), "peak"
		}
		if err := r.tableSizes(ctx, label, id); err != nil {
			return err
		}
	}

	// Publish everything, then let retention remove it.
	total, err := r.db.count(ctx, "SELECT count(*) FROM outbox_events")
	if err != nil {
		return err
	}
	// The publisher's claim and mark, in big batches to get through a
	// million rows in reasonable time: the rows take the same path (and
	// leave the same dead versions in the same indexes) as when published.
	bulk := max(cfg.Bulk, 5000)
	r.logf("  publishing all %d rows (claim+mark loop, bulk %d)", total, bulk)
	ev, _, err := r.drainStatements(ctx, bulk, 1)
	if err != nil {
		return err
	}
	r.addRun(Measurement{ID: "scale.drain", Scenario: "scale", Name: fmt.Sprintf("claim+mark (bulk %d) drain of a %d-row table", bulk, total),
		Backend: "postgres", Unit: "events/s"}, ev)
	if err := r.tableSizes(ctx, "wave published, before retention", "published"); err != nil {
		return err
	}
	del, err := r.runBenchmark(ctx, statementsPkg, "DeletePublished", 1, "BENCH_BATCH=10000")
	if err != nil {
		return err
	}
	deleted, err := metric(del, "rows/op")
	if err != nil {
		return err
	}
	perSecond, err := metric(del, "rows/s")
	if err != nil {
		return err
	}
	r.addRun(Measurement{ID: "scale.retention", Scenario: "scale",
		Name: fmt.Sprintf("retention: delete %.0f published rows in batches of 10,000", deleted), Backend: "postgres",
		Unit: "rows/s"}, perSecond)
	r.logf("  retention removed %.0f rows", deleted)
	if err := r.tableSizes(ctx, "after retention (no vacuum yet)", "after-retention"); err != nil {
		return err
	}
	if err := vacuum(ctx, r.db); err != nil {
		return err
	}
	if err := r.tableSizes(ctx, "after retention + VACUUM", "after-vacuum"); err != nil {
		return err
	}
	small := cfg.ScaleSizes[0]
	if err := fx.Seed(ctx, r.db, small); err != nil {
		return err
	}
	if err := analyze(ctx, r.db); err != nil {
		return err
	}
	if err := r.claimLatency(ctx, small,
		fmt.Sprintf("%d pending after %.0f rows passed through retention", small, deleted), "after-retention"); err != nil {
		return err
	}
	if err := r.maintainOutboxIndexes(ctx); err != nil {
		return err
	}
	if err := r.tableSizes(ctx, fmt.Sprintf("after the index upkeep (%d pending, as before the wave)", small), "after-maintenance"); err != nil {
		return err
	}
	return r.claimLatency(ctx, small,
		fmt.Sprintf("%d pending after the index upkeep", small), "after-maintenance")
}

// maintainOutboxIndexes runs the publisher's index upkeep as a retention
// round does (after VACUUM, as autovacuum would have run by then), with
// the shipped defaults, and records how long it took and what it rebuilt.
func (r *Runner) maintainOutboxIndexes(ctx context.Context) error {
	if err := vacuum(ctx, r.db); err != nil {
		return err
	}
	daemon := config.Default().Relay
	upkeep := relay.Options{ReindexBloatFactor: daemon.ReindexBloatFactor, ReindexMinBytes: daemon.ReindexMinBytes}
	if r.cfg.Smoke {
		upkeep.ReindexMinBytes = 1 // smoke indexes are all under the minimum: rebuild anyway so the path runs
	}
	start := time.Now()
	done, err := relay.RebuildIndexes(ctx, r.db.Pool, upkeep)
	if err != nil {
		return fmt.Errorf("index upkeep: %w", err)
	}
	var names, parts []string
	for _, d := range done {
		if d.Err != nil {
			return fmt.Errorf("index upkeep: %w", d.Err)
		}
		names = append(names, d.Index)
		parts = append(parts, fmt.Sprintf("%s %.1f -> %.1f MB in %s", d.Index, float64(d.BytesBefore)/(1<<20), float64(d.BytesAfter)/(1<<20),
			d.Took.Round(time.Millisecond)))
	}
	took := time.Since(start)
	r.addRun(Measurement{ID: "scale.maintenance", Scenario: "scale", Backend: "postgres", Unit: "s",
		Name: fmt.Sprintf("index upkeep after the wave (bloat factor %v, min %d MiB): %d indexes rebuilt",
			upkeep.ReindexBloatFactor, upkeep.ReindexMinBytes>>20, len(names)),
		Note: strings.Join(parts, "; ")}, took.Seconds())
	r.logf("  index upkeep rebuilt %d indexes in %s: %s", len(names), took.Round(time.Millisecond), strings.Join(parts, "; "))
	return nil
}

// vacuum runs VACUUM (ANALYZE) on the outbox.
func vacuum(ctx context.Context, db *DB) error {
	if _, err := db.Pool.Exec(ctx, "VACUUM (ANALYZE) outbox_events"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}

// claimLatency times ClaimSamples claims (each followed by its mark and a
// top-up insert of copies of the claimed rows, so the pending count stays
// at size: relay/internal/claim's BenchmarkClaimMark) per run, each run
// after a VACUUM, and explains one more claim after them.
func (r *Runner) claimLatency(ctx context.Context, size int, label, id string) error {
	cfg := r.cfg
	var plans, notes []string
	for run := 1; run <= cfg.Runs; run++ {
		// Every run starts from the state autovacuum would leave: the
		// dead versions of earlier claims would otherwise pile up at the
		// head of the pending index and make small tables look slow.
		if err := vacuum(ctx, r.db); err != nil {
			return err
		}
		planPath, err := r.planPath(fmt.Sprintf("claim-plan.%s.run%d", id, run))
		if err != nil {
			return err
		}
		figures, err := r.runBenchmark(ctx, statementsPkg, "ClaimMark", cfg.ClaimSamples, "BENCH_BULK="+strconv.Itoa(cfg.Bulk), "BENCH_PLAN_FILE="+planPath)
		if err != nil {
			return fmt.Errorf("claims at %s (%d pending): %w", label, size, err)
		}
		exec, err := planSummary(planPath)
		if err != nil {
			return err
		}
		plan := r.rel(planPath)
		plans = append(plans, plan)
		notes = append(notes, fmt.Sprintf("run %d: %s", run, exec))
		base := Measurement{Scenario: "scale", Backend: "postgres", Unit: "ms", Profile: strings.Join(plans, ","),
			Note: "EXPLAIN ANALYZE of the claim after each run: " + strings.Join(notes, "; ")}
		for _, p := range []struct{ slug, name string }{{"claim-p50", "claim p50"}, {"claim-p99", "claim p99"}, {"mark-p50", "mark p50"}} {
			v, err := metric(figures, p.slug+"-ms")
			if err != nil {
				return err
			}
			m := base
			m.ID = fmt.Sprintf("scale.%s.%s", p.slug, id)
			m.Name = fmt.Sprintf("%s (bulk %d), %s", p.name, cfg.Bulk, label)
			r.addRun(m, v)
		}
		r.logf("  run %d: %s: claim p50 %.2f ms p99 %.2f ms, mark p50 %.2f ms", run, label,
			figures["claim-p50-ms"], figures["claim-p99-ms"], figures["mark-p50-ms"])
	}
	return nil
}

// tableSizes records the outbox's table and index sizes.
func (r *Runner) tableSizes(ctx context.Context, label, id string) error {
	var table, index, rows int64
	if err := r.db.Pool.QueryRow(ctx, sqlTableSizes).Scan(&table, &index, &rows); err != nil {
		return fmt.Errorf("table sizes: %w", err)
	}
	const mb = 1 << 20
	perIndex, err := r.indexSizes(ctx)
	if err != nil {
		return err
	}
	r.addRun(Measurement{ID: "scale.size.table." + id, Scenario: "scale", Name: fmt.Sprintf("outbox table size, %s (%d rows)", label, rows),
		Backend: "postgres", Unit: "MB"}, float64(table)/mb)
	r.addRun(Measurement{ID: "scale.size.index." + id, Scenario: "scale", Name: fmt.Sprintf("outbox index size, %s", label),
		Backend: "postgres", Unit: "MB", Note: perIndex}, float64(index)/mb)
	r.logf("  sizes %s: table %.1f MB, indexes %.1f MB (%s), %d rows", label, float64(table)/mb, float64(index)/mb, perIndex, rows)
	return nil
}

// indexSizes lists each outbox index with its size in MB.
func (r *Runner) indexSizes(ctx context.Context) (string, error) {
	rows, err := r.db.Pool.Query(ctx, sqlIndexSizes)
	if err != nil {
		return "", fmt.Errorf("index sizes: %w", err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var name string
		var size int64
		if err := rows.Scan(&name, &size); err != nil {
			return "", fmt.Errorf("index sizes: %w", err)
		}
		parts = append(parts, fmt.Sprintf("%s %.1f MB", name, float64(size)/(1<<20)))
	}
	return strings.Join(parts, ", "), rows.Err()
}
