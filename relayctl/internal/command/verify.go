package command

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

const verifyUsage = `
verify [--samples N] [--json] [hook flags]

Compares the service's source of truth with its read models through the
service's Verifier hook, all from one Postgres snapshot (REPEATABLE READ),
and prints what the Verifier reports: the aggregates of the source of
truth, then each read model it compared (OK or DRIFT) or could not compare
(SKIPPED). Kinds of drift (a Verifier may report its own):

  missing                a live aggregate has no projection row / document
  missing_tombstone      a deleted aggregate has no tombstone
  extra                  a row / document has no aggregate
  stale                  older version than the source (a stale overwrite
                         or a lost update)
  ahead                  newer version than the source
  resurrected            deleted in the source, live in the read model
  deleted_in_projection  live in the source, a tombstone in the read model
  diverged               same version, different state

Prints a summary and up to --samples ids per kind. Exit 0 when everything
compared matches, 1 on drift, 3 when a store cannot be read. A read model
the Verifier cannot reach for lack of configuration (e.g. its URL is not
set) is skipped with a warning and does not count as drift.

Repair: relayctl rebuild (restates every aggregate; projections apply what
they miss); for "diverged" or "ahead" rows delete the row first, then
relayctl rebuild --ids <ids>; for a read model the service's Reindexer
rebuilds (e.g. a search index), relayctl rebuild --reindex.`

// verifyReport is the Verifier's report and its verdict.
type verifyReport struct {
	hook.Report
	Converged bool `json:"converged"`
}

func drifted(s hook.Store) bool { return len(s.Drift) > 0 }

func runVerify(ctx context.Context, c *cli, args []string) error {
	v := c.hooks.Verifier
	fs := newFlags(c, "verify", verifyUsage)
	db := addDBFlags(c, fs)
	hf := addHookFlags(c, fs, v)
	samples := fs.Int("samples", 10, "sample ids printed per kind of drift")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
	}
	if v == nil {
		return noHook("verify", "Verifier", "source of truth against read models")
	}
	if *samples < 0 {
		return usageErr("--samples must be >= 0")
	}
	pool, err := db.open(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	// Every figure from one snapshot: while projections still move, counts
	// read a moment apart could disagree with the comparison.
	var rep verifyReport
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		r, err := v.Verify(ctx, tx, hf.env(), *samples)
		rep.Report = r
		return err
	})
	if err != nil {
		return err
	}
	rep.Converged = true
	for i, s := range rep.Stores {
		if s.Drift == nil {
			rep.Stores[i].Drift = []hook.Drift{}
		}
		if drifted(s) {
			rep.Converged = false
		}
	}
	if *asJSON {
		if err := writeJSON(c.stdout, rep); err != nil {
			return err
		}
	} else {
		printVerify(c.stdout, rep)
	}
	for _, s := range rep.Stores {
		if !s.Checked {
			fmt.Fprintf(c.stderr, "WARNING: %s NOT VERIFIED: %s\n", s.Name, s.Note)
		}
	}
	if !rep.Converged {
		return problemErr("read models drift from the source of truth")
	}
	return nil
}

func printVerify(w io.Writer, rep verifyReport) {
	fmt.Fprintf(w, "source of truth: %d %s(s), %d deleted\n", rep.Rows, rep.Noun, rep.Deleted)
	for _, s := range rep.Stores {
		switch {
		case !s.Checked:
			fmt.Fprintf(w, "%s: SKIPPED (%s)\n", s.Name, s.Note)
			continue
		case !drifted(s):
			fmt.Fprintf(w, "%s: OK (%d rows, %d tombstones)\n", s.Name, s.Rows, s.Tombstones)
			continue
		}
		fmt.Fprintf(w, "%s: DRIFT (%d rows, %d tombstones)\n", s.Name, s.Rows, s.Tombstones)
		if s.Note != "" {
			fmt.Fprintf(w, "  %s\n", s.Note)
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  KIND\tCOUNT\tSAMPLE ID\tSOURCE VERSION\tSTORE VERSION")
		for _, k := range s.Drift {
			fmt.Fprintf(tw, "  %s\t%d\t\t\t\n", k.Kind, k.Count)
			for _, sm := range k.Samples {
				fmt.Fprintf(tw, "  \t\t%s\t%s\t%s\n", sm.ID, versionText(sm.SourceVersion), versionText(sm.StoreVersion))
			}
		}
		tw.Flush()
	}
	if rep.Converged {
		fmt.Fprintln(w, "CONVERGED")
	} else {
		fmt.Fprintln(w, "DRIFT: see above (relayctl verify --help for repairs)")
	}
}

func versionText(v int64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprint(v)
}
