package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestTargets(t *testing.T) {
	cfg := Config{Bulk: 500, ScaleSizes: []int{10_000, 1_000_000}, RTTs: []time.Duration{0, 15 * time.Millisecond}}
	r := &Report{}
	put := func(id string, v float64) { r.add(Measurement{ID: id, Runs: []float64{v}}) }
	put("ceiling.claim.w1", 10_000)
	put("ceiling.claim.w2", 12_000)
	put("ceiling.publish.pstest", 8_000)
	put("drain.pstest.i1", 4_500) // 4500 / publish 8000 = 0.56, at round trip 0 (>= 0.5): PASS
	put("drain.pstest.i2", 4_400) // 0.98x: MISS
	put("ceiling.publish.pstest-rtt15ms", 10_000)
	put("drain.pstest-rtt15ms.i1", 6_000) // 0.6 of the publish ceiling, with a round trip (>= 0.8): MISS
	put("drain.pstest-rtt15ms.i2", 6_000) // 1.0x: PASS
	put("drain.pstest.i1.requests-per-1k", 110)
	put("ceiling.publish.pstest.requests-per-1k", 100) // 1.1x: PASS
	put("drain.pstest.i1.billable-per-event", 700)
	put("drain.pstest.i1.bytes-per-event", 600) // 1.17x: MISS
	put("drain.pstest.i1.refused", 0)
	put("drain.pstest.i2.refused", 0) // PASS
	put("drain.pstest-rtt15ms.i1.requests-per-1k", 130)
	put("ceiling.publish.pstest-rtt15ms.requests-per-1k", 100) // 1.3x: MISS
	put("drain.pstest-rtt15ms.i2.refused", 2)                  // MISS
	put("ceiling.project.b500.w2", 10_000)
	put("apply.direct.pg", 5_000) // 0.5: MISS
	put("scale.claim-p50.n10000", 2)
	put("scale.claim-p50.n1000000", 5) // 2.5x: MISS
	r.add(Measurement{ID: "memory.publisher.pstest", Scenario: "memory", Name: "publisher", Runs: []float64{40, 160}})
	put("drain.pstest.i1.cpu", 0.040)
	put("ceiling.publish.pstest.cpu", 0.030) // 1.33x: PASS
	put("drain.pstest-rtt15ms.i1.cpu", 0.050)
	put("ceiling.publish.pstest-rtt15ms.cpu", 0.030) // 1.67x: MISS
	put("receive.pstest.cpu-ratio", 1.4)             // PASS
	put("receive.pstest-rtt15ms.cpu-ratio", 2.1)     // MISS

	wantStatuses(t, targets(r, cfg), map[string]string{
		"publisher drain, 1 instance, vs the publish ceiling (pstest)":         "PASS",
		"publisher drain, 2 instances vs 1 (pstest)":                           "MISS",
		"publisher drain, 1 instance, vs the publish ceiling (pstest-rtt15ms)": "MISS",
		"publisher drain, 2 instances vs 1 (pstest-rtt15ms)":                   "PASS",
		"Publish requests per event, drain vs the library (pstest)":            "PASS",
		"billable bytes per event vs bytes sent, drain (pstest)":               "MISS",
		"Publish requests the strict double refused, drains (pstest)":          "PASS",
		"Publish requests per event, drain vs the library (pstest-rtt15ms)":    "MISS",
		"Publish requests the strict double refused, drains (pstest-rtt15ms)":  "MISS",
		"projector apply into pg (direct)":                                     "MISS",
		"claim latency at 1000000 vs 10000 pending":                            "MISS",
		"peak RSS, publisher": "MISS", // max over runs, not the median
		"publisher CPU per event vs the client library's (pstest)":         "PASS",
		"publisher CPU per event vs the client library's (pstest-rtt15ms)": "MISS",
		"projector CPU per event vs a bare Receive loop (pstest)":          "PASS",
		"projector CPU per event vs a bare Receive loop (pstest-rtt15ms)":  "MISS",
	})

	// The publisher's CPU is compared without its start-up when measured.
	r.Measurements = nil
	put("drain.pstest.i1.cpu", 0.050)
	put("drain.pstest.i1.cpu-drain", 0.044)
	put("ceiling.publish.pstest.cpu", 0.030)
	for _, tg := range targets(r, cfg) {
		if tg.Name == "publisher CPU per event vs the client library's (pstest)" && (tg.Status != "PASS" || fmt.Sprintf("%.3f", tg.Figure) != "1.467") {
			t.Errorf("CPU without start-up: %s %.3f, want PASS 1.467", tg.Status, tg.Figure)
		}
	}
}

func TestWaveTarget(t *testing.T) {
	cfg := Config{Bulk: 500, ScaleSizes: []int{10_000, 1_000_000}}
	for _, c := range []struct {
		after float64
		want  string
	}{{30, "PASS"}, {41, "MISS"}} {
		r := &Report{}
		put := func(id string, v float64) { r.add(Measurement{ID: id, Runs: []float64{v}}) }
		put("scale.size.index.before", 20)
		put("scale.size.index.peak", 600)
		put("scale.size.index.after-vacuum", 600)
		put("scale.size.index.after-maintenance", c.after)
		var got []Target
		for _, tg := range targets(r, cfg) {
			if tg.from == "scale.size.index.after-maintenance" {
				got = append(got, tg)
			}
		}
		if len(got) != 1 || got[0].Status != c.want {
			t.Errorf("index size %v MB after vs 20 before: %+v, want one target %s", c.after, got, c.want)
		}
	}
}

func TestCostTargets(t *testing.T) {
	cfg := Config{CostRates: []int{500, 1000, 2000}}
	r := &Report{}
	put := func(id string, v float64) { r.add(Measurement{ID: id, Runs: []float64{v}}) }
	if ts := costTargets(r, cfg); len(ts) != 0 {
		t.Fatalf("no cost measurements: want no cost targets, got %v", ts)
	}
	for _, rate := range []int{500, 1000, 2000} {
		put(fmt.Sprintf("cost.off.r%d.commit-p99", rate), 10)
		put(fmt.Sprintf("cost.off.r%d.achieved", rate), float64(rate))
		put(fmt.Sprintf("cost.off.r%d.given-up", rate), 0)
	}
	put("cost.pstest.coalesced.r500.events-per-claim", 3)          // < 20: MISS
	put("cost.pstest.coalesced.r500.published-p99", 30)            // <= 47 ms: PASS
	put("cost.pstest.coalesced.r1000.published-p99", 55)           // > 54 ms: MISS
	put("cost.pstest.coalesced.r2000.published-p99", 300)          // not a judged rate
	put("cost.pstest-rtt15ms.coalesced.r500.events-per-claim", 40) // not round trip 0: ignored
	put("cost.sql.r500.commit-p99", 12)                            // 1.2x: PASS
	put("cost.sql.r1000.commit-p99", 20)                           // 2x: MISS
	for _, rate := range []int{500, 1000} {
		put(fmt.Sprintf("cost.off.r%d.wal-per-event", rate), 1500)
	}
	put("cost.sql.r500.wal-per-event", 2200)                    // 700 added: PASS
	put("cost.sql.r1000.wal-per-event", 2400)                   // 900 added: MISS
	put("cost.pstest.coalesced.r500.notifications-per-1k", 12)  // <= 50: PASS
	put("cost.pstest.coalesced.r1000.notifications-per-1k", 80) // > 50: MISS

	r.Targets = costTargets(r, cfg) // modeTargets: TestModeTargets
	got := wantStatuses(t, r.Targets, map[string]string{
		"events per claim at 500 commits/s, coalesced (pstest, round trip 0)":                         "MISS",
		"commit->published p99 at 500 commits/s, coalesced (pstest, round trip 0)":                    "PASS",
		"commit->published p99 at 1000 commits/s, coalesced (pstest, round trip 0)":                   "MISS",
		"writer commit p99 at 500 commits/s, the relay's statements alone vs no relay":                "PASS",
		"writer commit p99 at 1000 commits/s, the relay's statements alone vs no relay":               "MISS",
		"writer commit p99 at 2000 commits/s, the relay's statements alone vs no relay":               "N/A",
		"WAL the relay's statements add per event at 500 commits/s":                                   "PASS",
		"WAL the relay's statements add per event at 1000 commits/s":                                  "MISS",
		"WAL the relay's statements add per event at 2000 commits/s":                                  "N/A",
		"wake-up notifications per 1,000 commits at 500 commits/s, coalesced (pstest, round trip 0)":  "PASS",
		"wake-up notifications per 1,000 commits at 1000 commits/s, coalesced (pstest, round trip 0)": "MISS",
		"wake-up notifications per 1,000 commits at 2000 commits/s, coalesced (pstest, round trip 0)": "N/A",
	})
	if f := got["writer commit p99 at 1000 commits/s, the relay's statements alone vs no relay"].Figure; f != 2 {
		t.Errorf("ratio at 1000/s: %v, want 2", f)
	}
	if f := got["WAL the relay's statements add per event at 1000 commits/s"].Figure; f != 900 {
		t.Errorf("WAL added at 1000/s: %v, want 900", f)
	}
	// A whole relay running and the CPU burner explain the ratio in its
	// detail; they do not change the status.
	put("cost.burst.r1000.commit-p99", 18)
	put("cost.pstest.coalesced.r1000.commit-p99", 11)
	for _, tg := range costTargets(r, cfg) {
		if strings.HasPrefix(tg.Name, "writer commit p99 at 1000") {
			if tg.Status != "MISS" || !strings.Contains(tg.Detail, "duty cycle (4ms/40ms): 1.80x") ||
				!strings.Contains(tg.Detail, "a whole relay running (coalesced, pstest): 1.10x") {
				t.Errorf("1000/s with the burst and coalesced figures: %s, detail %q", tg.Status, tg.Detail)
			}
		}
	}
	// A baseline that did not keep up (given-up commits: its p99 is a
	// lower bound) judges nothing, even where the ratio would pass.
	put("cost.off.r2000.given-up", 0) // runs 0, 0: median 0
	put("cost.sql.r2000.commit-p99", 11)
	for _, tg := range costTargets(r, cfg) {
		if strings.HasPrefix(tg.Name, "writer commit p99 at 2000") && tg.Status != "PASS" {
			t.Errorf("2000/s with a sustained baseline at 1.1x: %s, want PASS", tg.Status)
		}
	}
	put("cost.off.r2000.given-up", 1500)
	put("cost.off.r2000.given-up", 1500) // runs 0, 0, 1500, 1500: median 750
	for _, tg := range costTargets(r, cfg) {
		if strings.HasPrefix(tg.Name, "writer commit p99 at 2000") && tg.Status != "N/A" {
			t.Errorf("2000/s with a baseline that gave up commits: %s (%s), want N/A", tg.Status, tg.Detail)
		}
	}

	// The N/A row has no figure: the JSON result says null (JSON has no NaN).
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("encoding a report with an N/A target: %v", err)
	}
	if !strings.Contains(string(b), `"figure":null`) {
		t.Errorf("N/A target's figure not null in %s", b)
	}
}

// wantStatuses checks that ts are exactly the targets named in want, with
// those statuses, and returns them by name.
func wantStatuses(t *testing.T, ts []Target, want map[string]string) map[string]Target {
	t.Helper()
	got := map[string]Target{}
	for _, tg := range ts {
		got[tg.Name] = tg
	}
	for name, status := range want {
		if got[name].Status != status {
			t.Errorf("%s: %s (%v), want %s", name, got[name].Status, got[name].Figure, status)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d targets, want %d: %v", len(got), len(want), got)
	}
	return got
}

func TestModeTargets(t *testing.T) {
	cfg := Config{CostRates: []int{500}}
	r := &Report{}
	put := func(id string, v float64) { r.add(Measurement{ID: id, Runs: []float64{v}}) }
	put("cost.off.r500.commit-p99", 10)
	put("cost.off.r500.pg-cpu-per-1k", 1.0)
	put("cost.off.r500.wal-per-event", 1500)
	put("cost.pstest.coalesced.r500.pg-cpu-per-1k", 2.0) // poll adds 1.0
	put("cost.pstest.log.r500.pg-cpu-per-1k", 1.1)       // log adds 0.1: 0.1x, PASS
	put("drain.pstest.i1.pg-cpu-per-1k", 0.5)            // poll live 1.0 / drain 0.5: 2x, MISS
	put("cost.pstest.log.r500.wal-per-event", 1560)      // 60 B added: PASS
	put("cost.pstest.log.r500.commit-p99", 30)           // the whole relay beside the writers, 3x: detail only
	put("cost.logsql.r500.commit-p99", 12)               // the log stream alone, 1.2x: MISS
	put("cost.logsql.r500.pg-cpu-per-1k", 1.05)          // the stream alone adds 0.05: detail
	put("takeover.log.kill9", 0.6)                       // <= 10 s: PASS
	got := wantStatuses(t, modeTargets(r, cfg), map[string]string{
		"Postgres CPU the relay adds per 1,000 events at 500 commits/s, log vs poll mode (pstest)": "PASS",
		"poll mode: Postgres CPU per event at 500 commits/s vs in the drain (pstest)":              "MISS",
		"WAL the relay adds per event at 500 commits/s, log mode":                                  "PASS",
		"writer commit p99 at 500 commits/s, the log stream alone vs no relay":                     "MISS",
		"log mode: reader takeover after kill -9":                                                  "PASS",
	})
	if f := got["WAL the relay adds per event at 500 commits/s, log mode"].Figure; f != 60 {
		t.Errorf("WAL added by the log mode: %v, want 60", f)
	}
	if f := got["writer commit p99 at 500 commits/s, the log stream alone vs no relay"].Figure; math.Abs(f-1.2) > 1e-9 {
		t.Errorf("writer p99 with the log stream alone: %v, want 1.2 (the whole relay's 3x is detail)", f)
	}
	if d := got["Postgres CPU the relay adds per 1,000 events at 500 commits/s, log vs poll mode (pstest)"].Detail; !strings.Contains(d, "the log stream alone (pg_recvlogical, no relay) adds 0.050") {
		t.Errorf("Postgres CPU detail %q does not give the log stream's own cost", d)
	}
}
