package upkeep

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
)

// OutboxIndexNames are the indexes of outbox_events that eventrelay's
// migrations create: the only ones the relay measures and rebuilds
// (an adopter's own indexes are left alone). Every name that reaches a
// REINDEX or DROP INDEX statement comes from this list, or is a leftover
// of one of them (<name>_ccnew / _ccold) read from pg_class and matched
// against it.
var OutboxIndexNames = []string{
	"outbox_events_pkey",
	"outbox_events_event_id_key",
	"outbox_events_aggregate_version_key",
	"outbox_events_pending_idx",
	"outbox_events_pending_key_idx",
	"outbox_events_blocking_idx",
	"outbox_events_failed_idx",
	"outbox_events_published_idx",
}

// The two statements of the index rebuild that are not in sqlc/queries:
// an index name is an identifier, not a bind parameter, and both must run
// outside a transaction block (so not in a function either). The name is
// quoted with pgx.Identifier and comes from OutboxIndexNames.
const (
	// reindexStatement rebuilds an index without blocking writes: Postgres
	// builds <name>_ccnew beside it, swaps the two and drops the old one.
	reindexStatement = "REINDEX INDEX CONCURRENTLY %s"
	// dropLeftoverStatement drops what an interrupted rebuild left: the
	// invalid <name>_ccnew (or <name>_ccold, interrupted after the swap).
	dropLeftoverStatement = "DROP INDEX CONCURRENTLY IF EXISTS %s"
)

// leftover matches the names Postgres gives the temporary indexes of
// REINDEX CONCURRENTLY (a digit is added when the name is taken).
var leftover = regexp.MustCompile(`^(.+)_cc(new|old)[0-9]*$`)

// OutboxIndexes describes the outbox's valid indexes.
func (s *Store) OutboxIndexes(ctx context.Context) ([]IndexStat, error) {
	rows, err := outboxdb.New(s.pool).OutboxIndexStats(ctx, OutboxIndexNames)
	if err != nil {
		return nil, fmt.Errorf("reading outbox index sizes: %w", postgres.Classify(err))
	}
	out := make([]IndexStat, len(rows))
	for i, r := range rows {
		out[i] = IndexStat{
			Name: r.Name, Bytes: r.Bytes,
			StatsBytes: r.StatsPages * r.BlockSize, StatsEntries: r.StatsEntries, NeededBytes: r.NeededPages * r.BlockSize,
		}
	}
	return out, nil
}

// RebuildIndexes rebuilds the named indexes one after the other without
// blocking writes, on one connection, which holds the schema's
// session-level maintenance lock for the whole run. locked is false, and
// nothing is done, when another session holds the lock. Invalid leftovers
// of an interrupted rebuild are dropped first. A failed index is reported
// in its Rebuild and the next one is tried; err is for what stops the
// whole run.
func (s *Store) RebuildIndexes(ctx context.Context, names []string) (bool, []Rebuild, error) {
	for _, n := range names {
		if !slices.Contains(OutboxIndexNames, n) {
			return false, nil, fmt.Errorf("rebuilding outbox indexes: %q is not an outbox index", n)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("rebuilding outbox indexes: %w", postgres.Classify(err))
	}
	defer conn.Release()
	q := outboxdb.New(conn)
	locked, err := q.TryLockOutboxMaintenance(ctx)
	if err != nil || !locked {
		if err != nil {
			err = fmt.Errorf("taking the outbox maintenance lock: %w", postgres.Classify(err))
		}
		return false, nil, err
	}
	defer unlockMaintenance(conn)

	if err := dropLeftovers(ctx, conn.Conn()); err != nil {
		return true, nil, err
	}
	var done []Rebuild
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		done = append(done, rebuild(ctx, conn.Conn(), name))
	}
	return true, done, ctx.Err()
}

// unlockMaintenance releases the maintenance lock; when it cannot, it
// closes the connection, which releases it too.
func unlockMaintenance(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ok, err := outboxdb.New(conn).UnlockOutboxMaintenance(ctx); err != nil || !ok {
		_ = conn.Conn().Close(ctx)
	}
}

// dropLeftovers drops the invalid leftovers of interrupted rebuilds of the
// outbox's indexes. Run it under the maintenance lock: a rebuild in
// progress has an invalid <name>_ccnew too.
func dropLeftovers(ctx context.Context, conn *pgx.Conn) error {
	invalid, err := outboxdb.New(conn).InvalidOutboxIndexes(ctx)
	if err != nil {
		return fmt.Errorf("listing invalid outbox indexes: %w", postgres.Classify(err))
	}
	for _, name := range invalid {
		m := leftover.FindStringSubmatch(name)
		if m == nil || !slices.Contains(OutboxIndexNames, m[1]) {
			continue
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(dropLeftoverStatement, pgx.Identifier{name}.Sanitize())); err != nil {
			return fmt.Errorf("dropping %s, left by an interrupted rebuild: %w", name, postgres.Classify(err))
		}
	}
	return nil
}

// rebuild runs REINDEX CONCURRENTLY on one index and reads its size
// before and after.
func rebuild(ctx context.Context, conn *pgx.Conn, name string) Rebuild {
	r := Rebuild{Name: name}
	size := func() (int64, error) { return outboxdb.New(conn).OutboxIndexSize(ctx, name) }
	var err error
	if r.Before, err = size(); err != nil {
		r.Err = fmt.Errorf("reading the size of %s: %w", name, postgres.Classify(err))
		return r
	}
	start := time.Now()
	if _, err := conn.Exec(ctx, fmt.Sprintf(reindexStatement, pgx.Identifier{name}.Sanitize())); err != nil {
		r.Err = fmt.Errorf("rebuilding %s: %w", name, postgres.Classify(err))
		return r
	}
	r.Took = time.Since(start)
	if r.After, err = size(); err != nil {
		r.Err = fmt.Errorf("reading the size of %s: %w", name, postgres.Classify(err))
	}
	return r
}
