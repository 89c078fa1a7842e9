package relay

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
)

// refreshIndexGauges reads the index sizes into outbox_index_bytes.
func (r *Relay) refreshIndexGauges(ctx context.Context) ([]upkeep.IndexStat, error) {
	stats, err := r.upkeep.OutboxIndexes(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range stats {
		r.m.IndexBytes.WithLabelValues(s.Name).Set(float64(s.Bytes))
	}
	return stats, nil
}

// maintainIndexes refreshes outbox_index_bytes and rebuilds the bloated
// outbox indexes (one replica at a time). It runs after each retention
// round.
func (r *Relay) maintainIndexes(ctx context.Context) {
	u := r.opts.indexUpkeep()
	stats, err := r.refreshIndexGauges(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.m.ReindexFailed.Inc()
			r.log.Warn("reading outbox index sizes", "error", err)
		}
		return
	}
	bloated := u.Bloated(stats)
	if len(bloated) == 0 {
		return
	}
	names := make([]string, len(bloated))
	for i, s := range bloated {
		names[i] = s.Name
		r.log.Info("outbox index bloated: rebuilding it", "index", s.Name, "bytes", s.Bytes,
			"entries", int64(s.StatsEntries), "needed_bytes", s.NeededBytes, "bloat", s.Bloat(), "bloat_factor", u.BloatFactor)
	}
	locked, done, err := r.upkeep.RebuildIndexes(ctx, names)
	if !locked && err == nil {
		r.log.Info("outbox index rebuild skipped: another session holds the maintenance lock", "indexes", names)
		return
	}
	for _, d := range done {
		if d.Err != nil {
			r.m.ReindexFailed.Inc()
			r.log.Warn("rebuilding outbox index", "index", d.Name, "error", d.Err)
			continue
		}
		r.m.Reindexed.WithLabelValues(d.Name).Inc()
		r.m.IndexBytes.WithLabelValues(d.Name).Set(float64(d.After))
		r.log.Info("rebuilt outbox index", "index", d.Name, "bytes_before", d.Before, "bytes_after", d.After,
			"took_ms", d.Took.Milliseconds())
	}
	if err != nil && ctx.Err() == nil {
		r.m.ReindexFailed.Inc()
		r.log.Warn("rebuilding outbox indexes", "error", err)
	}
}

// IndexRebuild is one outbox index rebuilt by RebuildIndexes.
type IndexRebuild struct {
	Index string
	// Bloat is the index's size at its last VACUUM/ANALYZE over what its
	// live entries need.
	Bloat float64
	// BytesBefore and BytesAfter are its sizes on disk.
	BytesBefore, BytesAfter int64
	Took                    time.Duration
	// Err is why it was not rebuilt (the next index was tried).
	Err error
}

// ErrMaintenanceLocked is returned by RebuildIndexes when another session
// (a relay's upkeep, or an operator) holds the schema's outbox maintenance
// lock: nothing was rebuilt.
var ErrMaintenanceLocked = errors.New("relay: another session holds the outbox maintenance lock")

// IndexState is one outbox index as the index upkeep sees it.
type IndexState struct {
	Index string
	// Bytes is its size on disk now.
	Bytes int64
	// Bloat is its size at its last VACUUM/ANALYZE over what its live
	// entries need (0: not measured yet).
	Bloat float64
	// Bloated says that RebuildIndexes, given the same Options, rebuilds it.
	Bloated bool
}

// OutboxIndexes reports the outbox indexes of the pool's schema and which
// of them RebuildIndexes would rebuild with o (its reindex fields; zero
// values take the defaults). It changes nothing.
func OutboxIndexes(ctx context.Context, pool *pgxpool.Pool, o Options) ([]IndexState, error) {
	o.ReindexOff = false
	o = o.WithDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	stats, err := upkeep.NewStore(pool).OutboxIndexes(ctx)
	if err != nil {
		return nil, err
	}
	bloated := map[string]bool{}
	for _, st := range o.indexUpkeep().Bloated(stats) {
		bloated[st.Name] = true
	}
	out := make([]IndexState, len(stats))
	for i, st := range stats {
		out[i] = IndexState{Index: st.Name, Bytes: st.Bytes, Bloat: st.Bloat(), Bloated: bloated[st.Name]}
	}
	return out, nil
}

// RebuildIndexes runs the index upkeep of one retention round now, on the
// outbox of the pool's schema: it rebuilds (REINDEX INDEX CONCURRENTLY,
// writes and claims go on) the outbox indexes that o.ReindexBloatFactor
// and o.ReindexMinBytes call bloated, one after the other, under the
// schema's maintenance lock. For deployments that set ReindexOff and
// rebuild in a maintenance window (relayctl outbox reindex). Only o's reindex fields are used; their
// zero values take the defaults.
func RebuildIndexes(ctx context.Context, pool *pgxpool.Pool, o Options) ([]IndexRebuild, error) {
	o.ReindexOff = false
	o = o.WithDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	s := upkeep.NewStore(pool)
	stats, err := s.OutboxIndexes(ctx)
	if err != nil {
		return nil, err
	}
	bloated := o.indexUpkeep().Bloated(stats)
	if len(bloated) == 0 {
		return nil, nil
	}
	names := make([]string, len(bloated))
	for i, st := range bloated {
		names[i] = st.Name
	}
	locked, done, err := s.RebuildIndexes(ctx, names)
	if err == nil && !locked {
		return nil, ErrMaintenanceLocked
	}
	out := make([]IndexRebuild, len(done))
	for i, d := range done {
		out[i] = IndexRebuild{Index: d.Name, Bloat: bloated[i].Bloat(), BytesBefore: d.Before, BytesAfter: d.After, Took: d.Took, Err: d.Err}
	}
	return out, err
}
