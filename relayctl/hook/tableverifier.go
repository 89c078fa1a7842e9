package hook

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Table names a Postgres table, its key column and its version column.
type Table struct {
	// Name is the table, optionally schema-qualified ("orders" or
	// "orders.orders"); unqualified names resolve through the search_path
	// (--schema).
	Name string
	// Key is the aggregate id column; Version the aggregate version column.
	Key, Version string
}

// TableVerifier is the Verifier of the common case: a source table and a
// Postgres read model that holds one row per aggregate, keyed by the
// aggregate id and carrying the version it was projected at. It reports
// missing (no read-model row), extra (no source row), stale (older
// version), ahead (newer version) and, when Columns pairs state columns,
// diverged (same version, different state).
type TableVerifier struct {
	// Noun names one aggregate in the report ("order").
	Noun string
	// Source is the source of truth, ReadModel the projection.
	Source, ReadModel Table
	// Columns pairs a source column with the read-model column that holds
	// the same state ("amount_cents": "amount_cents"); empty: no diverged
	// check.
	Columns map[string]string
}

var _ Verifier = TableVerifier{}

// Verify implements Verifier.
func (v TableVerifier) Verify(ctx context.Context, tx pgx.Tx, _ Env, samples int) (Report, error) {
	for _, t := range []Table{v.Source, v.ReadModel} {
		if t.Name == "" || t.Key == "" || t.Version == "" {
			return Report{}, errors.New("TableVerifier: Source and ReadModel need Name, Key and Version")
		}
	}
	src, rm := table(v.Source.Name), table(v.ReadModel.Name)
	rep := Report{Noun: v.Noun}
	store := Store{Name: "postgres " + v.ReadModel.Name, Checked: true}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+src).Scan(&rep.Rows); err != nil {
		return rep, fmt.Errorf("counting %s: %w", v.Source.Name, err)
	}
	if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+rm).Scan(&store.Rows); err != nil {
		return rep, fmt.Errorf("counting %s: %w", v.ReadModel.Name, err)
	}
	rows, err := tx.Query(ctx, v.query(), max(samples, 1))
	if err != nil {
		return rep, fmt.Errorf("comparing %s with %s: %w", v.Source.Name, v.ReadModel.Name, err)
	}
	tally := NewTally(samples)
	counted := map[string]bool{}
	for rows.Next() {
		var id, kind string
		var sv, rv, total int64
		if err := rows.Scan(&id, &kind, &sv, &rv, &total); err != nil {
			return rep, err
		}
		if !counted[kind] {
			tally.AddCount(kind, total)
			counted[kind] = true
		}
		tally.Sample(kind, Sample{ID: id, SourceVersion: sv, StoreVersion: rv})
	}
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("comparing %s with %s: %w", v.Source.Name, v.ReadModel.Name, err)
	}
	store.Drift = tally.Drift()
	rep.Stores = append(rep.Stores, store)
	return rep, nil
}

// query returns up to $1 drifting aggregates per kind, each with the total
// of its kind.
func (v TableVerifier) query() string {
	sk, sv := "s."+col(v.Source.Key), "s."+col(v.Source.Version)
	rk, rv := "r."+col(v.ReadModel.Key), "r."+col(v.ReadModel.Version)
	diverged := ""
	if len(v.Columns) > 0 {
		var a, b []string
		for s, r := range v.Columns {
			a, b = append(a, "s."+col(s)), append(b, "r."+col(r))
		}
		diverged = fmt.Sprintf("WHEN (%s) IS DISTINCT FROM (%s) THEN 'diverged'", strings.Join(a, ", "), strings.Join(b, ", "))
	}
	return fmt.Sprintf(`WITH cmp AS (
    SELECT coalesce(%[1]s::text, %[3]s::text) AS id,
           coalesce(%[2]s, 0)::bigint AS source_version,
           coalesce(%[4]s, 0)::bigint AS store_version,
           CASE
               WHEN %[3]s IS NULL THEN 'missing'
               WHEN %[1]s IS NULL THEN 'extra'
               WHEN %[4]s < %[2]s THEN 'stale'
               WHEN %[4]s > %[2]s THEN 'ahead'
               %[5]s
           END AS kind
    FROM %[6]s s FULL OUTER JOIN %[7]s r ON %[3]s = %[1]s
), drift AS (
    SELECT id, kind, source_version, store_version,
           row_number() OVER (PARTITION BY kind ORDER BY id) AS rn,
           count(*) OVER (PARTITION BY kind) AS kind_total
    FROM cmp WHERE kind IS NOT NULL
)
SELECT id, kind, source_version, store_version, kind_total FROM drift
WHERE rn <= $1::bigint ORDER BY kind, id`, sk, sv, rk, rv, diverged, table(v.Source.Name), table(v.ReadModel.Name))
}

func col(name string) string { return pgx.Identifier{name}.Sanitize() }

func table(name string) string { return pgx.Identifier(strings.Split(name, ".")).Sanitize() }
