package bench

import "testing"

func TestTargets(t *testing.T) {
	cfg := Config{Bulk: 500, ScaleSizes: []int{10_000, 1_000_000}}
	r := &Report{}
	put := func(id string, v float64) { r.add(Measurement{ID: id, Runs: []float64{v}}) }
	put("ceiling.claim.w1", 10_000)
	put("ceiling.claim.w2", 12_000)
	put("ceiling.publish.pstest", 8_000)
	put("drain.pstest.i1", 5_000) // 5000 / min(12000, 8000) = 0.625: PASS
	put("drain.pstest.i2", 6_000) // 1.2x, and the ceiling allows only 1.6x: MISS
	put("ceiling.project.b500.w2", 10_000)
	put("apply.direct.pg", 5_000) // 0.5: MISS
	put("scale.claim-p50.n10000", 2)
	put("scale.claim-p50.n1000000", 5) // 2.5x: MISS
	r.add(Measurement{ID: "memory.publisher.pstest", Scenario: "memory", Name: "publisher", Runs: []float64{40, 160}})

	got := map[string]Target{}
	for _, tg := range targets(r, cfg) {
		got[tg.Name] = tg
	}
	want := map[string]string{
		"publisher drain, 1 instance (pstest)":       "PASS",
		"publisher drain, 2 instances vs 1 (pstest)": "MISS",
		"projector apply into pg (direct)":           "MISS",
		"claim latency at 1000000 vs 10000 pending":  "MISS",
		"peak RSS, publisher":                        "MISS", // max over runs, not the median
	}
	for name, status := range want {
		if got[name].Status != status {
			t.Errorf("%s: %s (%v), want %s", name, got[name].Status, got[name].Figure, status)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d targets, want %d: %v", len(got), len(want), got)
	}

	// Where the ceiling does not allow 1.5x, the scaling target is N/A.
	r.Measurements = nil
	put("ceiling.claim.w1", 6_000)
	put("ceiling.publish.pstest", 8_000)
	put("drain.pstest.i1", 5_000)
	put("drain.pstest.i2", 5_500)
	for _, tg := range targets(r, cfg) {
		if tg.Name == "publisher drain, 2 instances vs 1 (pstest)" && tg.Status != "N/A" {
			t.Errorf("2 instances with no headroom: %s, want N/A", tg.Status)
		}
	}
}
