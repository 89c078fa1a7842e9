package upkeep

import "time"

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
