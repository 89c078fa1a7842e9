package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/relay"
)

const reindexUsage = `
reindex (--dry-run | --by WHO --why WHY) [--bloat-factor F] [--min-bytes N]

Rebuilds the bloated outbox indexes now (REINDEX INDEX CONCURRENTLY: writes
and claims go on), as a relay's retention round does: an index whose size
at its last VACUUM/ANALYZE exceeds --bloat-factor times what its live
entries need, and is at least --min-bytes, is rebuilt. For deployments that
turn the relays' own upkeep off (outbox.reindex_bloat_factor: 0) and rebuild
in a maintenance window. It takes the schema's outbox maintenance lock: when
a relay (or another operator) holds it, nothing is done (exit 1).

--dry-run lists every outbox index with its size and bloat and marks the
ones a real run rebuilds; a real run is recorded in admin_audit with what
it rebuilt.`

func runReindex(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "reindex", reindexUsage)
	db := addDBFlags(c, fs)
	audit := addAuditFlags(fs)
	factor := fs.Float64("bloat-factor", 0, "rebuild an index this many times larger than its live entries need (default: the relay's, 4)")
	minBytes := fs.Int64("min-bytes", 0, "leave indexes smaller than this alone (default: the relay's, 8 MiB)")
	dryRun := fs.Bool("dry-run", false, "list the indexes and what would be rebuilt; change nothing")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if !*dryRun {
		if err := audit.require("reindex"); err != nil {
			return err
		}
	}
	o := relay.Options{ReindexBloatFactor: *factor, ReindexMinBytes: *minBytes}
	if err := o.Validate(); err != nil {
		return usageErr("reindex: %v", err)
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	states, err := relay.OutboxIndexes(ctx, pool, o)
	if err != nil {
		return fmt.Errorf("reading the outbox indexes: %w", postgres.Classify(err))
	}
	n := 0
	for _, s := range states {
		mark := ""
		if s.Bloated {
			mark, n = "  <- rebuild", n+1
		}
		fmt.Fprintf(c.stdout, "%-40s %10.1f MiB  bloat %5.1fx%s\n", s.Index, float64(s.Bytes)/(1<<20), s.Bloat, mark)
	}
	fmt.Fprintf(c.stdout, "reindex: %d of %d outbox index(es) bloated\n", n, len(states))
	if *dryRun || n == 0 {
		if *dryRun {
			fmt.Fprintln(c.stdout, "dry run: nothing changed")
		}
		return nil
	}
	done, err := relay.RebuildIndexes(ctx, pool, o)
	if errors.Is(err, relay.ErrMaintenanceLocked) {
		return problemErr("reindex: nothing rebuilt: %v (a relay's upkeep or another operator is at work; try again later)", err)
	}
	details := map[string]any{"bloat_factor": *factor, "min_bytes": *minBytes, "outcome": "ok"}
	var rebuilt []map[string]any
	failed := 0
	for _, d := range done {
		r := map[string]any{"index": d.Index, "bytes_before": d.BytesBefore, "bytes_after": d.BytesAfter, "took_ms": d.Took.Milliseconds()}
		if d.Err != nil {
			r["error"], failed = d.Err.Error(), failed+1
		}
		rebuilt = append(rebuilt, r)
		fmt.Fprintf(c.stdout, "rebuilt %s: %.1f -> %.1f MiB in %s%s\n", d.Index, float64(d.BytesBefore)/(1<<20), float64(d.BytesAfter)/(1<<20),
			d.Took.Round(time.Millisecond), errSuffix(d.Err))
	}
	details["indexes"] = rebuilt
	if err != nil || failed > 0 {
		details["outcome"] = "failed"
	}
	auditID, aerr := writeAudit(ctx, pool, "reindex", audit.by, audit.why, details)
	if aerr != nil {
		return aerr
	}
	fmt.Fprintf(c.stdout, "audit row admin_audit.id=%d\n", auditID)
	if err != nil {
		return fmt.Errorf("reindex: %w", postgres.Classify(err))
	}
	if failed > 0 {
		return problemErr("reindex: %d index(es) not rebuilt (see above)", failed)
	}
	return nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return " (failed: " + err.Error() + ")"
}
