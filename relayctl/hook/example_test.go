package hook_test

import (
	"fmt"

	"github.com/eventrelay/eventrelay/relayctl/hook"
)

// A Verifier compares its source with a read model and tallies what
// drifts; relayctl verify prints the report and exits 1 on drift.
func ExampleTally() {
	source := map[string]int64{"o-1": 3, "o-2": 1, "o-3": 2} // aggregate id -> version
	readModel := map[string]int64{"o-1": 2, "o-3": 2, "o-9": 1}
	tally := hook.NewTally(10)
	for _, id := range []string{"o-1", "o-2", "o-3"} {
		switch v, ok := readModel[id]; {
		case !ok:
			tally.Add("missing", id, source[id], 0)
		case v < source[id]:
			tally.Add("stale", id, source[id], v)
		}
	}
	if _, ok := source["o-9"]; !ok {
		tally.Add("extra", "o-9", 0, readModel["o-9"])
	}
	store := hook.Store{Name: "postgres order_summaries", Checked: true, Rows: int64(len(readModel)), Drift: tally.Drift()}
	for _, d := range store.Drift {
		fmt.Println(d.Kind, d.Count, d.Samples[0].ID)
	}
	// Output:
	// extra 1 o-9
	// missing 1 o-2
	// stale 1 o-1
}
