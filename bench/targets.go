package bench

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"
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
	for _, b := range backendsOf(cfg) {
		backend := b.name
		pub, ok := med("ceiling.publish." + backend)
		d1, ok1 := med("drain." + backend + ".i1")
		if !ok || !ok1 || pub == 0 {
			continue
		}
		// The target is the Pub/Sub-side ceiling (the client library
		// publishing the same messages straight to the topic): half of it
		// at round trip 0, where the ceiling is the double's own speed,
		// 0.8 with a round trip. The claim ceiling and the shared-CPU
		// bound 1/(1/claim + 1/publish) say whether Postgres, not
		// Pub/Sub, is what bounds a miss.
		share := 0.8
		if b.rtt == 0 {
			share = 0.5
		}
		shared := 1 / (1/claimCeil + 1/pub)
		ts = append(ts, check(Target{Name: "publisher drain, 1 instance, vs the publish ceiling (" + backend + ")", Op: ">=", Threshold: share,
			Figure: d1 / pub, from: "drain." + backend + ".i1",
			Detail: fmt.Sprintf("%.0f / publish ceiling %.0f events/s; claim ceiling %.0f, shared-CPU bound %.0f (%.2f of it)",
				d1, pub, claimCeil, shared, d1/shared)}))
		if d2, ok2 := med("drain." + backend + ".i2"); ok2 {
			// A second replica with the shipped configuration must never
			// slow a drain; how far it speeds one up is the replica-bound
			// scenario's target (replicaTargets).
			ts = append(ts, check(Target{Name: "publisher drain, 2 instances vs 1 (" + backend + ")", Op: ">=", Threshold: 1,
				Figure: d2 / d1, Unit: "x", from: "drain." + backend + ".i2",
				Detail: fmt.Sprintf("%.0f / %.0f events/s; the claim and publish ceilings allow %.2fx", d2, d1, math.Min(claimCeil, pub)/d1)}))
		}
		ts = append(ts, requestTargets(med, check, backend)...)
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
	ts = append(ts, costTargets(r, cfg)...)
	return append(ts, modeTargets(r, cfg)...)
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

// costTargets are the targets on the cost scenario, at round trip 0:
//   - live traffic, coalesced wake-ups (the shipped configuration): at 500
//     commits/s at least 20 events per claim, and commit->published p99
//     within livePublishedP99;
//   - the relay's database cost, its statements alone (mode sql, no
//     publisher process, no Pub/Sub): the writers' commit p99 within 1.3x
//     of the p99 without the relay, and at most 800 WAL bytes added per
//     event, at every rate. The writers' p99 with a whole relay running
//     on the same 2 cores measures the machine's reaction to a
//     neighbour's bursts as much as the relay (mode burst), so it is
//     reported beside, not judged.
//
// A run that measured the baseline but not a mode reports its targets
// N/A; a run without the cost scenario reports none.
// livePublishedP99 bounds the live commit->published p99 (ms) by offered
// commits/s: what the relay reached before it claimed a key's waiting
// versions together, which live traffic (one version per key) must keep.
var livePublishedP99 = map[int]float64{500: 47, 1000: 54}

// coalescedNotificationsPer1k bounds how often coalesced writers still
// notify: at most one commit in 20 wakes the relay under steady load.
const coalescedNotificationsPer1k = 50

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
	explain := func(t Target, mode, detail string) Target {
		t = checkTarget(t)
		t.Detail = detail
		if t.Status == "N/A" {
			t.Detail = mode + " mode not measured in this run"
		}
		return t
	}
	for _, rate := range cfg.CostRates {
		id := fmt.Sprintf("%sr%d.", coalesced, rate)
		if rate == 500 {
			ts = append(ts, explain(Target{Name: "events per claim at 500 commits/s, coalesced (pstest, round trip 0)", Op: ">=", Threshold: 20,
				Figure: figure(id + "events-per-claim"), from: id + "events-per-claim"}, "coalesced",
				fmt.Sprintf("rows per non-empty claim; %.0f empty claims per 1,000 events; committed %.0f/s of the 500/s offered",
					figure(id+"empty-claims-per-1k"), figure(id+"achieved"))))
		}
		ts = append(ts, explain(Target{Name: fmt.Sprintf("wake-up notifications per 1,000 commits at %d commits/s, coalesced (pstest, round trip 0)", rate),
			Op: "<=", Threshold: coalescedNotificationsPer1k, Figure: figure(id + "notifications-per-1k"), from: id + "notifications-per-1k"}, "coalesced",
			"writers notify only while the relay is armed (idle); a busy relay claims on its cooldown"))
		if bound, ok := livePublishedP99[rate]; ok {
			ts = append(ts, explain(Target{Name: fmt.Sprintf("commit->published p99 at %d commits/s, coalesced (pstest, round trip 0)", rate),
				Op: "<=", Threshold: bound, Figure: figure(id + "published-p99"), Unit: " ms", from: id + "published-p99"}, "coalesced",
				fmt.Sprintf("p50 %.1f ms; from the commit's return to published_at", figure(id+"published-p50"))))
		}
	}
	for _, rate := range cfg.CostRates {
		offID, sqlID := fmt.Sprintf("cost.off.r%d.", rate), fmt.Sprintf("cost.sql.r%d.", rate)
		sql, off := figure(sqlID+"commit-p99"), figure(offID+"commit-p99")
		if math.IsNaN(off) {
			continue
		}
		baseline, _ := r.get(offID + "commit-p99")
		t := explain(Target{Name: fmt.Sprintf("writer commit p99 at %d commits/s, the relay's statements alone vs no relay", rate),
			Op: "<=", Threshold: 1.3, Figure: sql / off, Unit: "x", from: sqlID + "commit-p99"}, "sql",
			fmt.Sprintf("p99 %.2f ms / %.2f ms; committed %.0f/s and %.0f/s of the %d/s offered; without the relay: %s", sql, off,
				figure(sqlID+"achieved"), figure(offID+"achieved"), rate, baseline.Note))
		if running := figure(fmt.Sprintf("%sr%d.commit-p99", coalesced, rate)); !math.IsNaN(running) {
			t.Detail += fmt.Sprintf("; a whole relay running (coalesced, pstest): %.2fx", running/off)
		}
		if burst := figure(fmt.Sprintf("cost.burst.r%d.commit-p99", rate)); !math.IsNaN(burst) {
			t.Detail += fmt.Sprintf("; no relay but a CPU burner at idle priority with the publisher's duty cycle (%s): %.2fx, "+
				"the machine's reaction to a neighbour's bursts", costBurst, burst/off)
		}
		// Without the relay the writers must keep up, or the baseline p99
		// is a lower bound (given-up commits) and the ratio means nothing.
		if t.Status != "N/A" && (figure(offID+"given-up") > 0 || figure(offID+"achieved") < 0.95*float64(rate)) {
			t.Status = "N/A"
			t.Detail += fmt.Sprintf(" (without the relay the writers did not keep up the offered rate (%.0f commits given up): "+
				"this machine's ceiling, not the relay's cost)", figure(offID+"given-up"))
		}
		ts = append(ts, t)
		wal := figure(sqlID+"wal-per-event") - figure(offID+"wal-per-event")
		ts = append(ts, explain(Target{Name: fmt.Sprintf("WAL the relay's statements add per event at %d commits/s", rate),
			Op: "<=", Threshold: 800, Figure: wal, Unit: " B", from: sqlID + "wal-per-event"}, "sql",
			fmt.Sprintf("%.0f / %.0f WAL bytes per event (relay SQL only / no relay); Postgres CPU added %.3f CPU s per 1,000 events",
				figure(sqlID+"wal-per-event"), figure(offID+"wal-per-event"), figure(sqlID+"pg-cpu-per-1k")-figure(offID+"pg-cpu-per-1k"))))
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
	for _, b := range backendsOf(cfg) {
		backend := b.name
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

// backendOf is one Backend a run produces: its name and round trip.
type backendOf struct {
	name string
	rtt  time.Duration
}

// backendsOf are the Backends a run with cfg produces.
func backendsOf(cfg Config) []backendOf {
	var bs []backendOf
	for _, server := range []string{"pstest", "emulator"} {
		for _, rtt := range cfg.RTTs {
			bs = append(bs, backendOf{backendName(server, rtt), rtt})
		}
	}
	return bs
}

// requestTargets compare the drain's Publish requests with the library's
// for the same messages (at most 1.2x as many per event), its billable
// bytes with the bytes it sent (at most 1.1x: requests full enough that
// the 1,000-byte minimum barely shows), and require that the strict double
// refused none of its requests, in either drain.
func requestTargets(med func(string) (float64, bool), check func(Target) Target, backend string) []Target {
	var ts []Target
	d := "drain." + backend + ".i1."
	if req, ok := med(d + "requests-per-1k"); ok {
		if lib, ok := med("ceiling.publish." + backend + ".requests-per-1k"); ok && lib > 0 {
			ts = append(ts, check(Target{Name: "Publish requests per event, drain vs the library (" + backend + ")", Op: "<=",
				Threshold: 1.2, Figure: req / lib, Unit: "x", from: d + "requests-per-1k",
				Detail: fmt.Sprintf("%.1f / %.1f requests per 1,000 events (1 instance / the library, the same messages)", req, lib)}))
		}
	}
	bill, ok1 := med(d + "billable-per-event")
	sent, ok2 := med(d + "bytes-per-event")
	if ok1 && ok2 && sent > 0 {
		ts = append(ts, check(Target{Name: "billable bytes per event vs bytes sent, drain (" + backend + ")", Op: "<=",
			Threshold: 1.1, Figure: bill / sent, Unit: "x", from: d + "billable-per-event",
			Detail: fmt.Sprintf("%.0f / %.0f bytes per event (1 instance)", bill, sent)}))
	}
	r1, ok1 := med(d + "refused")
	r2, ok2 := med("drain." + backend + ".i2.refused")
	if ok1 || ok2 {
		ts = append(ts, check(Target{Name: "Publish requests the strict double refused, drains (" + backend + ")", Op: "<=",
			Threshold: 0, Figure: r1 + r2, Unit: "", from: d + "refused",
			Detail: "medians of the runs, 1 and 2 instances summed; a refused request is one Cloud Pub/Sub would refuse"}))
	}
	return ts
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
