package bench

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// evaluateTargets compares this run's medians with the bench's targets. A
// miss gets what bounds it: the CPU split of its measurement and, when a
// profile was captured, its top functions.
func evaluateTargets(ctx context.Context, r *Report, cfg Config) []Target {
	ts := targets(r, cfg)
	for i := range ts {
		t := &ts[i]
		if cfg.Smoke {
			t.Detail = "smoke sizes are too small to judge (would be " + t.Status + "); " + t.Detail
			t.Status = "N/A"
			continue
		}
		if t.Status != "MISS" || t.from == "" {
			continue
		}
		m, _ := r.get(t.from)
		var bound []string
		if m.Note != "" {
			bound = append(bound, m.Note)
		}
		for _, p := range strings.Split(m.Profile, ",") {
			if p == "" {
				continue
			}
			t.Profiles = append(t.Profiles, p)
			// A .txt profile is a query plan, which the note already quotes.
			if strings.HasSuffix(p, ".pprof") {
				if top := pprofTop(ctx, filepath.Join(cfg.RepoDir, p), 8); top != "" {
					bound = append(bound, filepath.Base(p)+" top (flat): "+top)
				}
			}
		}
		t.Bound = strings.Join(bound, "; ")
	}
	return ts
}

func targets(r *Report, cfg Config) []Target {
	var ts []Target
	med, check := r.median, checkTarget

	claimCeil := math.Max(first(med("ceiling.claim.w1")), first(med("ceiling.claim.w2")))
	for _, backend := range backendNames(cfg) {
		pub, ok := med("ceiling.publish." + backend)
		d1, ok1 := med("drain." + backend + ".i1")
		if !ok || !ok1 || pub == 0 {
			continue
		}
		// The target is the Pub/Sub-side ceiling (the client library
		// publishing the same messages straight to the topic); the claim
		// ceiling and the shared-CPU bound 1/(1/claim + 1/publish) say
		// whether Postgres, not Pub/Sub, is what bounds a miss.
		shared := 1 / (1/claimCeil + 1/pub)
		ts = append(ts, check(Target{Name: "publisher drain, 1 instance, vs the publish ceiling (" + backend + ")", Op: ">=", Threshold: 0.8,
			Figure: d1 / pub, from: "drain." + backend + ".i1",
			Detail: fmt.Sprintf("%.0f / publish ceiling %.0f events/s; claim ceiling %.0f, shared-CPU bound %.0f (%.2f of it)",
				d1, pub, claimCeil, shared, d1/shared)}))
		if d2, ok2 := med("drain." + backend + ".i2"); ok2 {
			ceil := math.Min(claimCeil, pub)
			t := Target{Name: "publisher drain, 2 instances vs 1 (" + backend + ")", Op: ">=", Threshold: 1.5,
				Figure: d2 / d1, Unit: "x", from: "drain." + backend + ".i2",
				Detail: fmt.Sprintf("%.0f / %.0f events/s; ceiling allows %.2fx", d2, d1, ceil/d1)}
			t = check(t)
			if ceil < 1.5*d1 && t.Status == "MISS" {
				t.Status = "N/A"
				t.Detail += " (< 1.5x: the ceiling does not allow it)"
			}
			ts = append(ts, t)
		}
	}

	writeCeil := math.Max(first(med(fmt.Sprintf("ceiling.project.b%d.w1", cfg.Bulk))), first(med(fmt.Sprintf("ceiling.project.b%d.w2", cfg.Bulk))))
	for _, sink := range []string{"pg", "pg+es"} {
		for _, backend := range []string{"direct", "pstest", "emulator"} {
			v, ok := med("apply." + backend + "." + sink)
			if !ok || writeCeil == 0 {
				continue
			}
			ts = append(ts, check(Target{Name: "projector apply into " + sink + " (" + backend + ")", Op: ">=", Threshold: 0.6,
				Figure: v / writeCeil, Detail: fmt.Sprintf("%.0f / write ceiling %.0f events/s", v, writeCeil),
				from: "apply." + backend + "." + sink}))
		}
	}

	for _, l := range []struct {
		backend string
		bound   float64
	}{{"pstest", 50}, {"emulator", 150}} {
		if v, ok := med("latency." + l.backend + ".notify.r1000.projected-p99"); ok {
			w, _ := med("latency." + l.backend + ".notify.r1000.achieved")
			t := Target{Name: "commit->projected p99 at 1,000/s, NOTIFY (" + l.backend + ")", Op: "<=",
				Threshold: l.bound, Figure: v, Unit: " ms", from: "latency." + l.backend + ".notify.r1000.projected-p99",
				Detail: fmt.Sprintf("writer committed %.0f/s of the 1,000/s offered", w)}
			if w < 950 {
				t.Detail += " (it could not keep up: the figure is at a lower load)"
			}
			ts = append(ts, check(t))
		}
	}

	if len(cfg.ScaleSizes) >= 2 {
		lo, hi := cfg.ScaleSizes[0], cfg.ScaleSizes[len(cfg.ScaleSizes)-1]
		a, ok1 := med(fmt.Sprintf("scale.claim-p50.n%d", lo))
		b, ok2 := med(fmt.Sprintf("scale.claim-p50.n%d", hi))
		if ok1 && ok2 && a > 0 {
			ts = append(ts, check(Target{Name: fmt.Sprintf("claim latency at %d vs %d pending", hi, lo), Op: "<=", Threshold: 2,
				Figure: b / a, Unit: "x", Detail: fmt.Sprintf("p50 %.2f ms / %.2f ms", b, a),
				from: fmt.Sprintf("scale.claim-p50.n%d", hi)}))
		}
	}

	ts = append(ts, cpuTargets(med, check, cfg)...)
	ts = append(ts, waveTargets(med, check)...)
	ts = append(ts, replicaTargets(med, check)...)

	for _, m := range r.Measurements {
		if m.Scenario == "memory" {
			ts = append(ts, check(Target{Name: "peak RSS, " + m.Name, Op: "<=", Threshold: 150, Figure: m.Max, Unit: " MB",
				Detail: "max over runs of VmHWM", from: m.ID}))
		}
	}
	return append(ts, costTargets(r, cfg)...)
}

// median is the median of the runs of measurement id.
func (r *Report) median(id string) (float64, bool) {
	m, ok := r.get(id)
	return m.Median, ok && len(m.Runs) > 0
}

// checkTarget sets the status: N/A without a figure, else PASS or MISS.
func checkTarget(t Target) Target {
	if math.IsNaN(t.Figure) {
		t.Status = "N/A"
		return t
	}
	ok := t.Figure >= t.Threshold
	if t.Op == "<=" {
		ok = t.Figure <= t.Threshold
	}
	t.Status = map[bool]string{true: "PASS", false: "MISS"}[ok]
	return t
}

// costTargets are the targets on the cost scenario, for coalesced
// wake-ups at round trip 0: at 500 commits/s at least 20 events per claim
// with commit->published p99 within 50 ms, and at every rate the writers'
// commit p99 with the relay running within 1.3x of the p99 without it. A
// run that measured the baseline but not the coalesced mode reports them
// N/A; a run without the cost scenario reports none.
func costTargets(r *Report, cfg Config) []Target {
	const coalesced = "cost.pstest.coalesced."
	var ts []Target
	figure := func(id string) float64 {
		if v, ok := r.median(id); ok {
			return v
		}
		return math.NaN()
	}
	measured := false
	for _, rate := range cfg.CostRates {
		_, ok := r.median(fmt.Sprintf("cost.off.r%d.commit-p99", rate))
		measured = measured || ok
	}
	if !measured {
		return nil
	}
	explain := func(t Target, detail string) Target {
		t = checkTarget(t)
		t.Detail = detail
		if t.Status == "N/A" {
			t.Detail = "coalesced mode not measured in this run"
		}
		return t
	}
	if slices.Contains(cfg.CostRates, 500) {
		id := coalesced + "r500."
		epc, p99 := figure(id+"events-per-claim"), figure(id+"published-p99")
		ts = append(ts,
			explain(Target{Name: "events per claim at 500 commits/s, coalesced (pstest, round trip 0)", Op: ">=", Threshold: 20,
				Figure: epc, from: id + "events-per-claim"},
				fmt.Sprintf("rows per non-empty claim; %.0f empty claims per 1,000 events; committed %.0f/s of the 500/s offered",
					figure(id+"empty-claims-per-1k"), figure(id+"achieved"))),
			explain(Target{Name: "commit->published p99 at 500 commits/s, coalesced (pstest, round trip 0)", Op: "<=", Threshold: 50,
				Figure: p99, Unit: " ms", from: id + "published-p99"},
				fmt.Sprintf("p50 %.1f ms; from the commit's return to published_at", figure(id+"published-p50"))))
	}
	for _, rate := range cfg.CostRates {
		offID := fmt.Sprintf("cost.off.r%d.", rate)
		on, off := figure(fmt.Sprintf("%sr%d.commit-p99", coalesced, rate)), figure(offID+"commit-p99")
		if math.IsNaN(off) {
			continue
		}
		t := explain(Target{Name: fmt.Sprintf("writer commit p99 at %d commits/s, relay running (coalesced) vs not", rate),
			Op: "<=", Threshold: 1.3, Figure: on / off, Unit: "x", from: fmt.Sprintf("%sr%d.commit-p99", coalesced, rate)},
			fmt.Sprintf("p99 %.1f ms / %.1f ms; committed %.0f/s and %.0f/s of the %d/s offered", on, off,
				figure(fmt.Sprintf("%sr%d.achieved", coalesced, rate)), figure(offID+"achieved"), rate))
		if burst := figure(fmt.Sprintf("cost.burst.r%d.commit-p99", rate)); !math.IsNaN(burst) {
			t.Detail += fmt.Sprintf("; no relay but a CPU burner at idle priority with the publisher's duty cycle (%s): %.2fx, "+
				"the machine's reaction to a neighbour's bursts", costBurst, burst/off)
		}
		if sql := figure(fmt.Sprintf("cost.sql.r%d.commit-p99", rate)); !math.IsNaN(sql) {
			t.Detail += fmt.Sprintf("; the relay's statements alone: %.2fx", sql/off)
		}
		// Without the relay the writers must keep up, or the baseline p99
		// is a lower bound (given-up commits) and the ratio means nothing.
		if t.Status != "N/A" && (figure(offID+"given-up") > 0 || figure(offID+"achieved") < 0.95*float64(rate)) {
			t.Status = "N/A"
			t.Detail += fmt.Sprintf(" (without the relay the writers did not keep up the offered rate (%.0f commits given up): "+
				"this machine's ceiling, not the relay's cost)", figure(offID+"given-up"))
		}
		ts = append(ts, t)
	}
	return ts
}

func first(v float64, _ bool) float64 { return v }

// cpuTargets compare CPU per event with the client library's, each
// process's own CPU in the same run: the publisher draining (one
// instance) against the library publishing the same messages in its own
// process (ceilings), and the projector against a bare Receive loop
// acking the same messages (receive). At most 1.5x each.
func cpuTargets(med func(string) (float64, bool), check func(Target) Target, cfg Config) []Target {
	var ts []Target
	for _, backend := range backendNames(cfg) {
		fromStart, ok1 := med("drain." + backend + ".i1.cpu")
		lib, ok2 := med("ceiling.publish." + backend + ".cpu")
		if ok1 && ok2 && lib > 0 {
			// The library's CPU is its publish window's, its client made
			// before: the publisher's is compared without its start-up too.
			pub, window := fromStart, "from process start"
			if v, ok := med("drain." + backend + ".i1.cpu-drain"); ok {
				pub, window = v, fmt.Sprintf("start-up excluded; %.3f from process start, %.2fx", fromStart, fromStart/lib)
			}
			ts = append(ts, check(Target{Name: "publisher CPU per event vs the client library's (" + backend + ")", Op: "<=",
				Threshold: 1.5, Figure: pub / lib, Unit: "x", from: "drain." + backend + ".i1",
				Detail: fmt.Sprintf("%.3f / %.3f CPU s per 1,000 events (%s): the publisher draining, 1 instance, against the "+
					"library publishing the same messages in its own process", pub, lib, window)}))
		}
		ratio, ok := med("receive." + backend + ".cpu-ratio")
		if !ok {
			continue
		}
		proj, _ := med("receive." + backend + ".projector-cpu-per-1k")
		bare, _ := med("receive." + backend + ".bare-cpu-per-1k")
		projRate, _ := med("receive." + backend + ".projector-rate")
		bareRate, _ := med("receive." + backend + ".bare-rate")
		decode, _ := med("receive." + backend + ".decode-cpu-per-1k")
		without, _ := med("receive." + backend + ".cpu-ratio-without-decode")
		detail := fmt.Sprintf("median of the runs' ratios; medians %.3f / %.3f CPU s per 1,000 events, %.0f / %.0f events/s "+
			"(projector / Receive loop, each in its own process, the same messages); the decoder (events.Codec.Decode) alone %.3f CPU s per 1,000 "+
			"events, %.2fx without it", proj, bare, projRate, bareRate, decode, without)
		if noop, ok := med("receive." + backend + ".noop-cpu-per-1k"); ok {
			noopRatio, _ := med("receive." + backend + ".noop-cpu-ratio")
			detail += fmt.Sprintf("; the projector with a no-op handler %.3f CPU s per 1,000 events (%.2fx)", noop, noopRatio)
		}
		ts = append(ts, check(Target{Name: "projector CPU per event vs a bare Receive loop (" + backend + ")", Op: "<=",
			Threshold: 1.5, Figure: ratio, Unit: "x", from: "receive." + backend + ".cpu-ratio", Detail: detail}))
	}
	return ts
}

// waveTargets is the target of the scale scenario: the outbox's
// indexes, after a wave was published, deleted by retention and the index
// upkeep ran, are at most twice their size before it (same pending count).
func waveTargets(med func(string) (float64, bool), check func(Target) Target) []Target {
	before, ok1 := med("scale.size.index.before")
	after, ok2 := med("scale.size.index.after-maintenance")
	peak, _ := med("scale.size.index.peak")
	vacuumed, _ := med("scale.size.index.after-vacuum")
	if !ok1 || !ok2 || before <= 0 {
		return nil
	}
	return []Target{check(Target{Name: "outbox index size after the wave, retention and index upkeep vs before it", Op: "<=",
		Threshold: 2, Figure: after / before, Unit: "x", from: "scale.size.index.after-maintenance",
		Detail: fmt.Sprintf("%.1f MB / %.1f MB (peak %.1f MB, after retention + VACUUM %.1f MB)", after, before, peak, vacuumed)})}
}

// backendNames are the Backend names a run with cfg produces.
func backendNames(cfg Config) []string {
	var names []string
	for _, server := range []string{"pstest", "emulator"} {
		for _, rtt := range cfg.RTTs {
			names = append(names, backendName(server, rtt))
		}
	}
	return names
}

// replicaTargets are the replica targets (the replicas scenario): 2
// replicas drain at least 1.6x what one drains when the replica is the
// bottleneck, and a killed replica's partitions move within one lease.
func replicaTargets(med func(string) (float64, bool), check func(Target) Target) []Target {
	var ts []Target
	d1, ok1 := med("replicas.i1")
	d2, ok2 := med("replicas.i2")
	if ok1 && ok2 && d1 > 0 {
		ts = append(ts, check(Target{Name: fmt.Sprintf("2 publisher replicas vs 1 at %s round trip (replica-bound: concurrency %d, bulk %d)", replicaRTT, replicaConcurrency, replicaBulk),
			Op: ">=", Threshold: 1.6, Figure: d2 / d1, Unit: "x", from: "replicas.i2",
			Detail: fmt.Sprintf("%.0f / %.0f events/s", d2, d1)}))
	}
	if v, ok := med("replicas.kill-moved"); ok {
		ts = append(ts, check(Target{Name: "killed replica's partitions moved within one lease", Op: "<=",
			Threshold: replicaLease.Seconds(), Figure: v, Unit: " s", from: "replicas.kill-moved",
			Detail: fmt.Sprintf("kill -9 of 1 of 2 replicas until the survivor owned all partitions; lease %s", replicaLease)}))
	}
	return ts
}
