package admin

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/examples/catalog-demo/catalogdb"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// Verifier compares catalog.videos with video_projection and, when an
// Elasticsearch URL is configured, with the index behind the alias.
type Verifier struct{}

// Flags implements hook.Flagger: the search index's URL and alias.
func (Verifier) Flags() []hook.Flag { return Search.Flags() }

// Verify implements hook.Verifier.
func (Verifier) Verify(ctx context.Context, tx pgx.Tx, env hook.Env, samples int) (hook.Report, error) {
	q := catalogdb.New(tx)
	n, err := q.CountVideos(ctx, []uuid.UUID{})
	if err != nil {
		return hook.Report{}, fmt.Errorf("counting videos: %w", projection.PostgresError(err))
	}
	rep := hook.Report{Noun: "video", Rows: n.Total, Deleted: n.Deleted}
	pg, err := verifyProjection(ctx, q, samples)
	if err != nil {
		return rep, err
	}
	rep.Stores = append(rep.Stores, pg)
	search, err := Search.Store(ctx, tx, env, samples)
	if err != nil {
		return rep, err
	}
	rep.Stores = append(rep.Stores, search)
	return rep, nil
}

// verifyProjection compares videos with video_projection in SQL.
func verifyProjection(ctx context.Context, q *catalogdb.Queries, samples int) (hook.Store, error) {
	rep := hook.Store{Name: "postgres video_projection", Checked: true}
	n, err := q.CountVideoProjection(ctx)
	if err != nil {
		return rep, fmt.Errorf("counting video_projection: %w", projection.PostgresError(err))
	}
	rep.Rows, rep.Tombstones = n.Total, n.Deleted
	// With --samples 0 the query returns no rows: count kinds with 1 sample.
	rows, err := q.VerifyVideoProjection(ctx, int64(max(samples, 1)))
	if err != nil {
		return rep, fmt.Errorf("comparing videos with video_projection: %w", projection.PostgresError(err))
	}
	tally := hook.NewTally(samples)
	counted := map[string]bool{}
	for _, r := range rows {
		if !counted[r.Kind] {
			tally.AddCount(r.Kind, r.KindTotal)
			counted[r.Kind] = true
		}
		tally.Sample(r.Kind, hook.Sample{ID: r.ID.String(), SourceVersion: r.SourceVersion, StoreVersion: r.ProjectionVersion})
	}
	rep.Drift = tally.Drift()
	return rep, nil
}
