package hook

import (
	"context"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Verifier compares a service's source of truth with its read models.
// tx is one read-only REPEATABLE READ transaction, so every figure comes
// from one snapshot. A read model the verifier cannot compare (no URL
// configured) is a Store with Checked false and a Note: relayctl warns
// loudly and does not count it as drift. An error means a store could not
// be read (exit 3), not drift.
type Verifier interface {
	Verify(ctx context.Context, tx pgx.Tx, env Env, samples int) (Report, error)
}

// Report is one verification.
type Report struct {
	// Noun names one aggregate: "source of truth: 10 order(s), 1 deleted".
	Noun string `json:"noun"`
	// Rows and Deleted count the source of truth.
	Rows    int64 `json:"source_rows"`
	Deleted int64 `json:"source_deleted"`
	// Stores holds one comparison per read model.
	Stores []Store `json:"stores"`
}

// Store is the comparison of one read model with the source.
type Store struct {
	// Name names the read model: "postgres order_summaries".
	Name string `json:"store"`
	// Checked is false when the read model was not compared (Note says
	// why); relayctl then warns and does not count it as converged.
	Checked bool `json:"checked"`
	// Note explains a skip or a drift in one line.
	Note string `json:"note,omitempty"`
	// Rows and Tombstones count the read model.
	Rows       int64 `json:"rows"`
	Tombstones int64 `json:"tombstones"`
	// Drift lists what differs from the source; empty when it matches.
	Drift []Drift `json:"drift"`
}

// Drift is one kind of drift in one store. The kinds relayctl documents:
// missing, missing_tombstone, extra, stale (older version than the
// source: a stale overwrite or a lost update), ahead, resurrected (deleted
// in the source, live in the store), deleted_in_projection, diverged (same
// version, different state).
type Drift struct {
	// Kind is one of the kinds above (or the service's own).
	Kind string `json:"kind"`
	// Count is how many aggregates drift this way.
	Count int64 `json:"count"`
	// Samples are some of them (up to verify's --samples).
	Samples []Sample `json:"samples"`
}

// Sample is one drifting aggregate; a version of 0 means absent.
type Sample struct {
	// ID is the aggregate id; the versions are the source's and the
	// store's.
	ID            string `json:"id"`
	SourceVersion int64  `json:"source_version"`
	StoreVersion  int64  `json:"store_version"`
}

// Tally counts drift by kind, keeping up to a number of samples per kind.
type Tally struct {
	samples int
	kinds   map[string]*Drift
}

// NewTally keeps up to samples sample ids per kind.
func NewTally(samples int) *Tally {
	return &Tally{samples: samples, kinds: map[string]*Drift{}}
}

// Add counts one drifting aggregate.
func (t *Tally) Add(kind, id string, sourceVersion, storeVersion int64) {
	t.AddCount(kind, 1)
	t.Sample(kind, Sample{ID: id, SourceVersion: sourceVersion, StoreVersion: storeVersion})
}

// AddCount counts n drifting aggregates of kind without samples.
func (t *Tally) AddCount(kind string, n int64) {
	t.kind(kind).Count += n
}

// Sample records s under kind unless kind has its samples already; it
// does not count (for counts computed elsewhere, with AddCount).
func (t *Tally) Sample(kind string, s Sample) {
	d := t.kind(kind)
	if len(d.Samples) < t.samples {
		d.Samples = append(d.Samples, s)
	}
}

func (t *Tally) kind(kind string) *Drift {
	d := t.kinds[kind]
	if d == nil {
		d = &Drift{Kind: kind, Samples: []Sample{}}
		t.kinds[kind] = d
	}
	return d
}

// Drift returns the kinds counted, sorted by kind (empty, not nil, when
// the store matches).
func (t *Tally) Drift() []Drift {
	out := make([]Drift, 0, len(t.kinds))
	for _, d := range t.kinds {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Reindexer rebuilds an external read model (a search index) from the
// service's data, e.g. into a new index followed by an alias swap.
type Reindexer interface {
	// Plan checks the reindexer's settings (a *UsageError when one is
	// missing) and describes what Reindex will do, for the plan a dry run
	// prints: "rebuild the index behind alias orders from
	// order_summaries, then swap the alias".
	Plan(env Env) (string, error)
	// Reindex does it, printing its result to env.Stdout.
	Reindex(ctx context.Context, pool *pgxpool.Pool, env Env) error
}
