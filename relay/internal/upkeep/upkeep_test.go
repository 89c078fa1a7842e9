package upkeep

import (
	"slices"
	"testing"
)

func TestIndexUpkeepPicksOnlyBloatedIndexesOverTheMinimum(t *testing.T) {
	const mb = 1 << 20
	stats := []IndexStat{
		{Name: "bloated", StatsBytes: 100 * mb, StatsEntries: 1000, NeededBytes: 1 * mb},
		{Name: "healthy", StatsBytes: 100 * mb, StatsEntries: 1e6, NeededBytes: 80 * mb},
		{Name: "just-under-the-factor", StatsBytes: 40 * mb, StatsEntries: 1e5, NeededBytes: 10 * mb},
		{Name: "small", StatsBytes: 4 * mb, StatsEntries: 0, NeededBytes: 16 << 10},
		{Name: "never-measured", StatsBytes: 100 * mb, StatsEntries: -1, NeededBytes: 16 << 10},
	}
	names := func(u IndexUpkeep) []string {
		var out []string
		for _, s := range u.Bloated(stats) {
			out = append(out, s.Name)
		}
		return out
	}
	if got := names(IndexUpkeep{BloatFactor: 4, MinBytes: 8 * mb}); !slices.Equal(got, []string{"bloated"}) {
		t.Errorf("factor 4, min 8 MiB: %v, want [bloated]", got)
	}
	if got := names(IndexUpkeep{BloatFactor: 4}); !slices.Equal(got, []string{"bloated", "small"}) {
		t.Errorf("factor 4, no minimum: %v, want [bloated small]", got)
	}
	if got := names(IndexUpkeep{BloatFactor: 3.5}); !slices.Equal(got, []string{"bloated", "just-under-the-factor", "small"}) {
		t.Errorf("factor 3.5: %v", got)
	}
	if got := names(IndexUpkeep{MinBytes: 8 * mb}); len(got) != 0 {
		t.Errorf("factor 0 (off): %v, want none", got)
	}
}
