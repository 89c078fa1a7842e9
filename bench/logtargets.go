package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// logLiveRate is the commit rate of the log mode's live targets: the cost
// scenario runs the log mode at it at every round trip.
const logLiveRate = 1000

// logLiveP99 bounds the log mode's live commit->published p99 (ms) at
// logLiveRate, by round trip.
var logLiveP99 = map[time.Duration]float64{0: 25, 15 * time.Millisecond: 45}

// modeTargets compare the two relay modes measured in the same run: the
// polling relay as shipped (cost mode coalesced, the drain's default
// instances) and the log mode (cost mode log, the drain's log instance).
//
//   - Postgres CPU the relay adds per 1,000 events (mode minus relay off,
//     same writers): log <= 0.2x poll at 500 commits/s, and in the drain
//     (no writers there: the server's whole CPU is the relay's);
//   - WAL the relay adds per event: log <= 100 bytes;
//   - the writers' commit p99 with the log mode's stream alone (cost
//     mode logsql: what the log mode asks of the database, as mode sql is
//     the polling relay's statements alone) vs no relay: <= 1.1x; the
//     whole relay running beside the writers is in the detail;
//   - live commit->published p99 at 1,000/s, log mode: <= 25 ms at round
//     trip 0, <= 45 ms at 15 ms;
//   - a backlog drained in the log mode: >= 0.9x the same run's publish
//     ceiling, with a round trip;
//   - the polling relay: Postgres CPU per event at 500/s at most 1.5x its
//     CPU per event in the drain (its live p99 at 500/s is costTargets');
//   - the log reader's takeover after kill -9: <= 10 s (logTakeover).
func modeTargets(r *Report, cfg Config) []Target {
	var ts []Target
	if v, ok := r.median("takeover.log.kill9"); ok {
		ts = append(ts, checkTarget(Target{Name: "log mode: reader takeover after kill -9", Op: "<=", Threshold: 10, Figure: v, Unit: " s",
			from: "takeover.log.kill9", Detail: "until the standby streams the slot (2 publishers, pstest); the fault suite measures it under load too"}))
	}
	figure := func(id string) float64 {
		if v, ok := r.median(id); ok {
			return v
		}
		return math.NaN()
	}
	const poll, log = "cost.pstest.coalesced.", "cost.pstest.log."
	for _, rate := range cfg.CostRates {
		if _, ok := r.median(fmt.Sprintf("cost.off.r%d.commit-p99", rate)); !ok {
			continue // no cost scenario in this run
		}
		off := figure(fmt.Sprintf("cost.off.r%d.pg-cpu-per-1k", rate))
		pid, lid := fmt.Sprintf("%sr%d.", poll, rate), fmt.Sprintf("%sr%d.", log, rate)
		if rate == 500 {
			pc, lc := figure(pid+"pg-cpu-per-1k")-off, figure(lid+"pg-cpu-per-1k")-off
			detail := fmt.Sprintf("%.3f / %.3f CPU s per 1,000 events added (log / poll, coalesced defaults), relay off %.3f", lc, pc, off)
			if sc := figure(fmt.Sprintf("cost.logsql.r%d.pg-cpu-per-1k", rate)) - off; !math.IsNaN(sc) {
				detail += fmt.Sprintf("; the log stream alone (pg_recvlogical, no relay) adds %.3f (%.2fx poll): logical decoding's own cost", sc, sc/pc)
			}
			ts = append(ts, checkTarget(Target{Name: "Postgres CPU the relay adds per 1,000 events at 500 commits/s, log vs poll mode (pstest)",
				Op: "<=", Threshold: 0.2, Figure: lc / pc, Unit: "x", from: lid + "pg-cpu-per-1k", Detail: detail}))
			drain := figure("drain.pstest.i1.pg-cpu-per-1k")
			ts = append(ts, checkTarget(Target{Name: "poll mode: Postgres CPU per event at 500 commits/s vs in the drain (pstest)",
				Op: "<=", Threshold: 1.5, Figure: pc / drain, Unit: "x", from: pid + "pg-cpu-per-1k",
				Detail: fmt.Sprintf("%.3f CPU s per 1,000 events added at 500/s / %.3f in the drain of a backlog", pc, drain)}))
		}
		lw, ow, pw := figure(lid+"wal-per-event"), figure(fmt.Sprintf("cost.off.r%d.wal-per-event", rate)), figure(pid+"wal-per-event")
		ts = append(ts, checkTarget(Target{Name: fmt.Sprintf("WAL the relay adds per event at %d commits/s, log mode", rate),
			Op: "<=", Threshold: 100, Figure: lw - ow, Unit: " B", from: lid + "wal-per-event",
			Detail: fmt.Sprintf("%.0f / %.0f WAL bytes per event (log mode / relay off); poll mode adds %.0f", lw, ow, pw-ow)}))
		sid := fmt.Sprintf("cost.logsql.r%d.", rate)
		sp, lp, op := figure(sid+"commit-p99"), figure(lid+"commit-p99"), figure(fmt.Sprintf("cost.off.r%d.commit-p99", rate))
		if math.IsNaN(sp) {
			continue // no logsql mode in this run
		}
		ts = append(ts, checkTarget(Target{Name: fmt.Sprintf("writer commit p99 at %d commits/s, the log stream alone vs no relay", rate),
			Op: "<=", Threshold: 1.1, Figure: sp / op, Unit: "x", from: sid + "commit-p99",
			Detail: fmt.Sprintf("p99 %.2f / %.2f ms; the whole log relay running beside the writers (publisher and Pub/Sub double on the same 2 cores): %.2fx; poll mode's statements alone: %.2fx",
				sp, op, lp/op, figure(fmt.Sprintf("cost.sql.r%d.commit-p99", rate))/op)}))
	}
	for _, rtt := range cfg.RTTs {
		bound, ok := logLiveP99[rtt]
		backend := backendName("pstest", rtt)
		id := fmt.Sprintf("cost.%s.log.r%d.", backend, logLiveRate)
		if _, measured := r.median(id + "published-p99"); !ok || (!measured && !slices.Contains(cfg.CostRates, logLiveRate)) {
			continue
		}
		ts = append(ts, checkTarget(Target{Name: fmt.Sprintf("log mode: commit->published p99 at %d commits/s (%s)", logLiveRate, backend),
			Op: "<=", Threshold: bound, Figure: figure(id + "published-p99"), Unit: " ms", from: id + "published-p99",
			Detail: fmt.Sprintf("p50 %.1f ms; to the message's Pub/Sub publish time; committed %.0f/s", figure(id+"published-p50"), figure(id+"achieved"))}))
	}
	for _, b := range backendsOf(cfg) {
		if b.rtt == 0 {
			continue
		}
		pub, d := figure("ceiling.publish."+b.name), figure("drain."+b.name+".log.i1")
		if math.IsNaN(d) {
			continue
		}
		ts = append(ts, checkTarget(Target{Name: "log mode: drain of the backlog vs the publish ceiling (" + b.name + ")",
			Op: ">=", Threshold: 0.9, Figure: d / pub, from: "drain." + b.name + ".log.i1",
			Detail: fmt.Sprintf("%.0f / publish ceiling %.0f events/s; poll mode, 1 instance: %.0f", d, pub, figure("drain."+b.name+".i1"))}))
	}
	for _, b := range backendsOf(cfg) {
		pd, ld := figure("drain."+b.name+".i1.pg-cpu-per-1k"), figure("drain."+b.name+".log.i1.pg-cpu-per-1k")
		if math.IsNaN(ld) {
			continue
		}
		ts = append(ts, checkTarget(Target{Name: "Postgres CPU per 1,000 events in the drain, log vs poll mode (" + b.name + ")",
			Op: "<=", Threshold: 0.2, Figure: ld / pd, Unit: "x", from: "drain." + b.name + ".log.i1.pg-cpu-per-1k",
			Detail: fmt.Sprintf("%.3f / %.3f CPU s per 1,000 events (log / poll, 1 instance)", ld, pd)}))
	}
	return ts
}
