package biz

import (
	"context"
	"time"
)

// IndexStat is one outbox index as Postgres describes it.
type IndexStat struct {
	Name string
	// Bytes is its size on disk now.
	Bytes int64
	// StatsBytes and StatsEntries are its size and entry count as of its
	// last VACUUM, ANALYZE or build (StatsEntries < 0: never measured);
	// NeededBytes is what a fresh build of StatsEntries entries would take.
	StatsBytes   int64
	StatsEntries float64
	NeededBytes  int64
}

// Bloat is StatsBytes / NeededBytes (0 when unknown).
func (s IndexStat) Bloat() float64 {
	if s.StatsEntries < 0 || s.NeededBytes <= 0 {
		return 0
	}
	return float64(s.StatsBytes) / float64(s.NeededBytes)
}

// Rebuild is the outcome of rebuilding one index.
type Rebuild struct {
	Name          string
	Before, After int64 // bytes on disk
	Took          time.Duration
	Err           error
}

// IndexStore reads and rebuilds the outbox's own indexes (a fixed list:
// adopters' extra indexes are never touched).
type IndexStore interface {
	// OutboxIndexes describes the outbox's valid indexes.
	OutboxIndexes(ctx context.Context) ([]IndexStat, error)
	// RebuildIndexes rebuilds the named indexes one after the other
	// without blocking writes, holding the schema's maintenance lock.
	// locked is false, and nothing is done, when another session holds
	// the lock. Invalid leftovers of an interrupted rebuild are dropped
	// first. A failed index is reported in its Rebuild and the next one
	// is tried; err is for what stops the whole run.
	RebuildIndexes(ctx context.Context, names []string) (locked bool, done []Rebuild, err error)
}

// IndexUpkeep says when an outbox index is rebuilt: its size at its last
// VACUUM/ANALYZE is at least MinBytes and more than BloatFactor times what
// its live entries need. BloatFactor 0 turns rebuilds off.
type IndexUpkeep struct {
	BloatFactor float64
	MinBytes    int64
}

// Bloated are the indexes of stats to rebuild.
func (u IndexUpkeep) Bloated(stats []IndexStat) []IndexStat {
	if u.BloatFactor <= 0 {
		return nil
	}
	var out []IndexStat
	for _, s := range stats {
		if b := s.Bloat(); b > u.BloatFactor && s.StatsBytes >= u.MinBytes {
			out = append(out, s)
		}
	}
	return out
}

// refreshIndexGauges reads the index sizes into outbox_index_bytes.
func (r *Relay) refreshIndexGauges(ctx context.Context) ([]IndexStat, error) {
	stats, err := r.store.OutboxIndexes(ctx)
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
	u := IndexUpkeep{BloatFactor: r.cfg.ReindexBloatFactor, MinBytes: r.cfg.ReindexMinBytes}
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
	locked, done, err := r.store.RebuildIndexes(ctx, names)
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
