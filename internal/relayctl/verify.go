package relayctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/catalogdb"
)

const verifyUsage = `
verify [--samples N] [--json] [--elastic-url URL] [--alias videos]

Compares the source of truth (catalog.videos) with the Postgres read model
(video_projection) and, when ELASTIC_URL (or --elastic-url) is set, with the
Elasticsearch index behind --alias (tombstones included). Kinds of drift:

  missing                a live video has no projection row / document
  missing_tombstone      a deleted video has no tombstone
  extra                  a row / document has no video
  stale                  older version than the video
  ahead                  newer version than the video
  resurrected            video deleted, row / document live
  deleted_in_projection  video live, row / document a tombstone
  diverged               same version, different state (Postgres only)

Prints a summary and up to --samples ids per kind. Exit 0 when everything
matches, 1 on drift, 3 when a store cannot be read. Without ELASTIC_URL the
Elasticsearch comparison is skipped with a warning (and does not count as
drift).

Repair: relayctl rebuild (restates every video; projections apply what they
miss); for "diverged" or "ahead" rows delete the row first, then
relayctl rebuild --ids <ids>; for the index, relayctl rebuild --reindex.`

// driftKind is one kind of drift in one store.
type driftKind struct {
	Kind    string        `json:"kind"`
	Count   int64         `json:"count"`
	Samples []driftSample `json:"samples"`
}

type driftSample struct {
	ID            string `json:"id"`
	SourceVersion int64  `json:"source_version"`
	StoreVersion  int64  `json:"store_version"`
}

// storeReport is the comparison of one read model with the source.
type storeReport struct {
	Store   string      `json:"store"`
	Checked bool        `json:"checked"`
	Note    string      `json:"note,omitempty"`
	Rows    int64       `json:"rows"`
	Deleted int64       `json:"tombstones"`
	Drift   []driftKind `json:"drift"`
}

func (s *storeReport) drifted() bool { return len(s.Drift) > 0 }

type verifyReport struct {
	Videos        int64         `json:"videos"`
	DeletedVideos int64         `json:"deleted_videos"`
	Stores        []storeReport `json:"stores"`
	Converged     bool          `json:"converged"`
}

func runVerify(ctx context.Context, c *cli, args []string) error {
	fs := newFlags(c, "verify", verifyUsage)
	db := addDBFlags(c, fs)
	es := addElasticFlags(c, fs)
	samples := fs.Int("samples", 10, "sample ids printed per kind of drift")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, false); err != nil {
		return err
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
		q := catalogdb.New(tx)
		n, err := q.CountVideos(ctx, []uuid.UUID{})
		if err != nil {
			return fmt.Errorf("counting videos: %w", postgres.Classify(err))
		}
		rep = verifyReport{Videos: n.Total, DeletedVideos: n.Deleted, Converged: true}
		pg, err := verifyProjection(ctx, q, *samples)
		if err != nil {
			return err
		}
		rep.Stores = append(rep.Stores, pg)
		search, err := verifySearch(ctx, q, es, *samples)
		if err != nil {
			return err
		}
		rep.Stores = append(rep.Stores, search)
		return nil
	})
	if err != nil {
		return err
	}
	for _, s := range rep.Stores {
		if s.drifted() {
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
			fmt.Fprintf(c.stderr, "WARNING: %s NOT VERIFIED: %s\n", s.Store, s.Note)
		}
	}
	if !rep.Converged {
		return problemErr("read models drift from the source of truth")
	}
	return nil
}

func verifyProjection(ctx context.Context, q *catalogdb.Queries, samples int) (storeReport, error) {
	rep := storeReport{Store: "postgres video_projection", Checked: true, Drift: []driftKind{}}
	n, err := q.CountVideoProjection(ctx)
	if err != nil {
		return rep, fmt.Errorf("counting video_projection: %w", postgres.Classify(err))
	}
	rep.Rows, rep.Deleted = n.Total, n.Deleted
	rows, err := q.VerifyVideoProjection(ctx, int64(samples))
	if err != nil {
		return rep, fmt.Errorf("comparing videos with video_projection: %w", postgres.Classify(err))
	}
	// With --samples 0 the query returns no rows: count kinds with 1 sample.
	if samples == 0 {
		if rows, err = q.VerifyVideoProjection(ctx, 1); err != nil {
			return rep, fmt.Errorf("comparing videos with video_projection: %w", postgres.Classify(err))
		}
	}
	byKind := map[string]*driftKind{}
	for _, r := range rows {
		k := byKind[r.Kind]
		if k == nil {
			k = &driftKind{Kind: r.Kind, Count: r.KindTotal, Samples: []driftSample{}}
			byKind[r.Kind] = k
		}
		if len(k.Samples) < samples {
			k.Samples = append(k.Samples, driftSample{ID: r.ID.String(), SourceVersion: r.SourceVersion, StoreVersion: r.ProjectionVersion})
		}
	}
	rep.Drift = sortedKinds(byKind)
	return rep, nil
}

func sortedKinds(m map[string]*driftKind) []driftKind {
	out := make([]driftKind, 0, len(m))
	for _, k := range m {
		out = append(out, *k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

func printVerify(w io.Writer, rep verifyReport) {
	fmt.Fprintf(w, "source of truth: %d video(s), %d deleted\n", rep.Videos, rep.DeletedVideos)
	for _, s := range rep.Stores {
		switch {
		case !s.Checked:
			fmt.Fprintf(w, "%s: SKIPPED (%s)\n", s.Store, s.Note)
			continue
		case !s.drifted():
			fmt.Fprintf(w, "%s: OK (%d rows, %d tombstones)\n", s.Store, s.Rows, s.Deleted)
			continue
		}
		fmt.Fprintf(w, "%s: DRIFT (%d rows, %d tombstones)\n", s.Store, s.Rows, s.Deleted)
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
