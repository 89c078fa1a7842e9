package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/cmd/publisher/config"
	"github.com/eventrelay/eventrelay/examples/catalog-demo/events"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
	"github.com/eventrelay/eventrelay/settings"
)

// costWriterConns is the connection pool of the cost scenario's writers:
// a service's pool, which its requests wait for when the database stalls.
const costWriterConns = 16

// costMode is how the writers wake the publisher, if one runs.
type costMode struct {
	name, label string
	relay       bool          // a publisher daemon runs
	log         bool          // it runs in the log mode (reads a replication slot; times from Pub/Sub's publish times)
	sqlRelay    bool          // the publisher's claim and mark statements run alone (sqlRelay)
	logStream   bool          // the log mode's stream alone: pg_recvlogical reads the slot, no publisher (logStream)
	burst       bool          // no relay: a process that only burns CPU in bursts runs next to the writers (CPUBurstEnv)
	writer      outbox.Config // the writers' wake-up settings
	notifyEvery bool          // the bench notifies the publisher's channel in every writer transaction itself
	env         []string      // publisher settings beyond the bench's
}

// costModes run in this order at every rate: the baseline without a relay
// first; then the writers notifying on every commit and the relay claiming
// on every wake-up (the behaviour before coalesced wake-ups), the relay
// polling (default interval) with no NOTIFY, and the shipped defaults
// (writers notify only when an idle relay asked, the relay claims at most
// once per fetch cooldown); last, the relay's statements alone at the
// default fetch cooldown, no publisher process and no Pub/Sub (what the
// relay costs the writers' database itself; the writers do not notify);
// then the relay in the log mode (it reads the outbox's inserts from a
// replication slot: no claim, no mark, no NOTIFY; its slot is created
// before the step), and the log mode's stream alone (pg_recvlogical on the
// same slot and publication, no publisher and no Pub/Sub: what the log
// mode costs the writers' database itself); and no relay but a CPU burner with the publisher's duty cycle (costBurst,
// at idle priority, touching neither Postgres nor the network): how much of
// a co-located publisher's figure is the machine's reaction to a
// neighbour's bursts.
var costModes = []costMode{
	{name: "off", label: "relay off"},
	{name: "notify", label: "NOTIFY every commit", relay: true, notifyEvery: true,
		env: []string{"OUTBOX_FETCH_COOLDOWN_SECONDS=0"}},
	{name: "poll", label: "polling", relay: true, env: []string{"OUTBOX_LISTEN=false"}},
	{name: "coalesced", label: "coalesced (defaults)", relay: true, writer: outbox.Config{Notify: true}},
	{name: "sql", label: "relay SQL only", sqlRelay: true},
	{name: "log", label: "log mode", relay: true, log: true},
	{name: "logsql", label: "log stream only", logStream: true},
	{name: "burst", label: "CPU bursts, no relay", burst: true},
}

// costModeNamed returns the mode called name, or nil.
func costModeNamed(name string) *costMode {
	for i := range costModes {
		if costModes[i].name == name {
			return &costModes[i]
		}
	}
	return nil
}

// costModeNames lists the modes' names, in costModes order.
func costModeNames() []string {
	names := make([]string, len(costModes))
	for i, m := range costModes {
		names[i] = m.name
	}
	return names
}

// modes returns the cost modes this run measures, in costModes order.
func (c Config) modes() []costMode {
	if len(c.CostModes) == 0 {
		return costModes
	}
	var ms []costMode
	for _, m := range costModes {
		if slices.Contains(c.CostModes, m.name) {
			ms = append(ms, m)
		}
	}
	return ms
}

// costResult is one step: an offered commit rate in one mode.
type costResult struct {
	offered, achieved float64
	commits           []time.Duration // each commit from its due time to its return (or to when it was given up)
	startLags         []time.Duration // how late the load generator started each commit (included in commits)
	gaveUp            int             // commits given up: still waiting for a connection a step's length after the last was due
	published         []time.Duration // each event from its commit's return to published_at
	waited, sent      []time.Duration // the same split at claimed_at: waiting for a claim, then claimed until published_at
	claimMean         time.Duration   // the publisher's claim transactions' mean duration (0: no publisher)
	pgCPU             float64         // Postgres CPU seconds over the step (NaN: server not local)
	walBytes          float64         // WAL the server wrote over the step
	nonEmpty, empty   float64         // the publisher's claims in the step that returned rows, and that found none
	claimed           float64         // rows the non-empty claims returned
	notifications     float64         // wake-up notifications the writers sent (NaN: not counted)
	cpu               cpuUse
	waits             waitProfile        // the writers' backends while they committed
	statements        []statementFigures // what each statement did over the step (nil: pg_stat_statements not loaded)
}

// runCost measures what the relay costs the writers' database: writers
// commit one event per transaction at each offered rate, open loop, with
// no publisher running, then with a publisher in each costMode. It runs at
// every round trip of the strict double in front of pstest; the baseline
// (no Pub/Sub) and the higher rates at the first only, except the log
// mode's live rate (logLiveRate), run at every round trip.
func runCost(ctx context.Context, r *Runner) error {
	pub, why, err := r.bins.path(ctx, "publisher")
	if err != nil {
		return err
	}
	if pub == "" {
		r.report.skip("cost: %s", why)
		return nil
	}
	writerURL, err := withApplicationName(r.db.URL, costWriterApp)
	if err != nil {
		return err
	}
	pool, err := settings.OpenPool(ctx, settings.Database{URL: writerURL, Schema: Schema}, costWriterConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := warmWriters(ctx, pool); err != nil {
		return err
	}
	if sp := r.cfg.CostCPUs; sp != nil {
		if r.cpu.postmaster == 0 {
			return fmt.Errorf("-cost-cpus: the Postgres server is not a process of this machine, nothing to pin")
		}
		was, err := sp.pin(r.cpu.postmaster)
		defer was.restore(r.cpu.postmaster)
		if err != nil {
			return fmt.Errorf("-cost-cpus: %w", err)
		}
		r.report.note("cost: %s for the whole scenario, baseline included (-cost-cpus).", sp)
	}
	r.report.note("cost: writers commit one event per transaction through outbox.Writer on a %d-connection pool, open loop "+
		"(each commit starts at its scheduled time; latency counts from then), %s per step over up to %d aggregates; "+
		"one publisher (bulk %d) on pstest behind the strict double, which run in a process of their own (relaybench as its Pub/Sub "+
		"server), not in the writers'. Postgres CPU is the utime+stime of the server's "+
		"processes from the step's start until every event is published. In mode notify the writers do not set Notify: "+
		"each transaction runs one statement more, the bench's own pg_notify on the publisher's channel. In mode log the publisher "+
		"reads a replication slot it created before the step and marks nothing: commit->published runs to the message's Pub/Sub "+
		"publish time, received on a subscription of the bench's.",
		costWriterConns, r.cfg.LatencyEach, r.cfg.Aggregates, r.cfg.Bulk)
	statements, why := r.db.statementsLoaded(ctx)
	if !statements {
		r.report.skip("cost: per-statement figures: %s", why)
	}
	for run := 1; run <= r.cfg.Runs; run++ {
		for i, rtt := range r.cfg.RTTs {
			for _, rate := range r.cfg.CostRates {
				for _, m := range r.cfg.modes() {
					// With a round trip: the relay modes at the first rate,
					// and the log mode at its live target's rate too.
					if i > 0 && (!m.relay || (rate != r.cfg.CostRates[0] && !(m.log && rate == logLiveRate))) {
						continue
					}
					backend := backendName("pstest", rtt)
					res, err := r.costStep(ctx, pool, pub, rtt, m, rate, statements)
					if err != nil {
						return fmt.Errorf("%s, %s, %d/s: %w", backend, m.name, rate, err)
					}
					r.recordCost(backend, m, rate, res)
				}
			}
		}
	}
	return nil
}

// warmWriters opens the writer pool's connections and prepares their
// statements, so the first step does not measure connection set-up.
func warmWriters(ctx context.Context, pool *pgxpool.Pool) error {
	w, err := newLoadWriter(outbox.Config{}, false)
	if err != nil {
		return err
	}
	evs, err := NewFixture(costWriterConns).Generate(costWriterConns * 20)
	if err != nil {
		return err
	}
	_, _, err = openLoad(ctx, pool, w, evs, 2000, time.Minute)
	return err
}

// costStep writes LatencyEach worth of commits at perSecond in mode m and,
// with a relay, waits until every event is published; with statements, it
// reads what each statement did over the step from pg_stat_statements.
func (r *Runner) costStep(ctx context.Context, pool *pgxpool.Pool, pubBin string, rtt time.Duration, m costMode, perSecond int,
	statements bool) (costResult, error) {
	res := costResult{offered: float64(perSecond), pgCPU: math.NaN(), notifications: math.NaN()}
	if err := r.db.reset(ctx); err != nil {
		return res, err
	}
	var pubD *Daemon
	var psS *pubsubServer
	var metricsURL string
	var before map[string]float64
	var recv *publishTimes
	if m.log {
		if err := r.db.resetLog(ctx); err != nil {
			return res, err
		}
		defer r.db.resetLog(context.WithoutCancel(ctx)) //nolint:errcheck // the next log step resets it again, and fails if it cannot
	}
	if m.relay {
		b, s, err := r.startPubsubServer(ctx, rtt)
		if err != nil {
			return res, err
		}
		defer b.Close()
		psS = s
		if err := r.cfg.CostCPUs.pinDaemon(psS.Pid()); err != nil {
			return res, err
		}
		if err := b.EnsureTopic(ctx, events.Topic); err != nil {
			return res, err
		}
		if m.log {
			if recv, err = receivePublishTimes(ctx, b, events.Topic); err != nil {
				return res, err
			}
			defer recv.stop()
		}
		port, err := relaytest.FreePort()
		if err != nil {
			return res, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		name := "publisher-cost-" + m.name
		env := append(r.publisherEnv(b, name, port), m.env...)
		if m.log {
			env = append(env, r.db.logEnv()...)
		}
		pubD, err = startDaemon(pubBin, name, r.cfg.RepoDir, r.workDir("logs"), env)
		if err != nil {
			return res, err
		}
		defer pubD.Stop(30 * time.Second) //nolint:errcheck // the happy path checks the exit below
		if err := r.cfg.CostCPUs.pinDaemon(pubD.Pid()); err != nil {
			return res, err
		}
		if err := waitReady(ctx, pubD, addr); err != nil {
			return res, err
		}
		if m.log {
			if err := r.db.waitStreamed(ctx, pubD); err != nil {
				return res, err
			}
		}
		if err := r.cfg.CostCPUs.pinDaemon(pubD.Pid()); err != nil {
			return res, err
		}
		r.cpu.daemons = map[int]string{pubD.Pid(): "publisher", psS.Pid(): "pubsub"}
		defer func() { r.cpu.daemons = nil }()
		metricsURL = "http://" + addr + "/metrics"
		if before, err = scrapePublisher(ctx, metricsURL); err != nil {
			return res, err
		}
	}
	if m.burst {
		burner, err := r.startCPUBurst(ctx)
		if err != nil {
			return res, err
		}
		defer burner.Stop(5 * time.Second) //nolint:errcheck // a burner that does not stop is killed; it measured nothing
		r.cpu.daemons = map[int]string{burner.Pid(): "burst"}
		defer func() { r.cpu.daemons = nil }()
	}
	n := max(1, int(float64(perSecond)*r.cfg.LatencyEach.Seconds()))
	evs, err := NewFixture(min(r.cfg.Aggregates, max(n/2, 1))).Generate(n)
	if err != nil {
		return res, err
	}
	var stream *logStream
	if m.logStream {
		if err := r.db.resetLog(ctx); err != nil {
			return res, err
		}
		defer r.db.resetLog(context.WithoutCancel(ctx)) //nolint:errcheck // the next log step resets it again, and fails if it cannot
		if stream, err = r.db.startLogStream(ctx, r.workDir("logs")); err != nil {
			return res, err
		}
		defer stream.stop() // before resetLog: a slot streamed is not dropped
		if err := r.cfg.CostCPUs.pinDaemon(stream.pid()); err != nil {
			return res, err
		}
		r.cpu.daemons = map[int]string{stream.pid(): "log stream"}
		defer func() { r.cpu.daemons = nil }()
	}
	var sqlR *rootBenchmark
	if m.sqlRelay {
		// The relay's statements alone (relay/internal/claim's
		// BenchmarkPacedClaims): one claim per fetch cooldown, marked at
		// once, until the step's events are published.
		timeout := r.cfg.LatencyEach + r.cfg.LatencyDrain + time.Minute
		if sqlR, err = r.startBenchmark(ctx, statementsPkg, "PacedClaims", 1, "BENCH_BULK="+strconv.Itoa(r.cfg.Bulk), "BENCH_STOP=stdin",
			"BENCH_COOLDOWN_MS="+strconv.FormatInt(config.Default().Relay.FetchCooldown.Milliseconds(), 10),
			"BENCH_TIMEOUT_S="+strconv.Itoa(int(timeout.Seconds()))); err != nil {
			return res, err
		}
		defer sqlR.cmd.Process.Kill() //nolint:errcheck // ends a run a failed step left behind; one that exited ignores it
		r.cpu.daemons = map[int]string{sqlR.cmd.Process.Pid: "sql relay"}
		defer func() { r.cpu.daemons = nil }()
	}
	w, err := newLoadWriter(m.writer, m.notifyEvery)
	if err != nil {
		return res, err
	}
	walBefore, err := r.walBytes(ctx)
	if err != nil {
		return res, err
	}
	var notes *notificationCounter
	if m.relay && m.writer.Notify {
		if notes, err = countNotifications(ctx, r.db.URL, Schema); err != nil {
			return res, err
		}
		defer notes.Stop()
	}
	var stmts statementSnapshot
	if statements {
		if stmts, err = r.db.statements(ctx); err != nil {
			return res, err
		}
	}
	a := r.cpu.sample()
	waits := startWaitSampler(ctx, r.db.Pool, costWriterApp)
	commits, achieved, err := openLoad(ctx, pool, w, evs, perSecond, r.cfg.LatencyEach)
	var waitErr error
	res.waits, waitErr = waits.Stop()
	if err != nil {
		return res, err
	}
	if waitErr != nil {
		return res, waitErr
	}
	switch {
	case recv != nil:
		if err := recv.wait(ctx, pubD, n-countGivenUp(commits)); err != nil {
			return res, err
		}
	case pubD != nil:
		if err := r.waitDrained(ctx, []*Daemon{pubD}, n); err != nil {
			return res, err
		}
	case stream != nil:
		if err := r.db.waitConfirmed(ctx, r.cfg.LatencyDrain); err != nil {
			return res, fmt.Errorf("log stream: %w", err)
		}
	}
	var sqlFigures map[string]float64
	if sqlR != nil {
		err := r.db.waitNonePending(ctx, r.cfg.LatencyDrain)
		var waitErr error
		if sqlFigures, waitErr = sqlR.wait(); err == nil {
			err = waitErr
		}
		if err != nil {
			return res, fmt.Errorf("sql relay: %w", err)
		}
	}
	res.cpu = a.to(r.cpu.sample())
	if stmts != nil {
		after, err := r.db.statements(ctx)
		if err != nil {
			return res, err
		}
		res.statements = after.since(stmts)
	}
	if notes != nil {
		res.notifications = float64(notes.Stop())
	}
	walAfter, err := r.walBytes(ctx)
	if err != nil {
		return res, err
	}
	res.walBytes = walAfter - walBefore
	res.achieved = achieved
	if r.cpu.postmaster != 0 {
		res.pgCPU = res.cpu.Cores["postgres"] * res.cpu.Seconds
	}
	for _, c := range commits {
		res.commits = append(res.commits, c.latency())
		res.startLags = append(res.startLags, c.startLag())
		if c.gaveUp {
			res.gaveUp++
		}
	}
	switch {
	case sqlR != nil:
		res.empty, res.nonEmpty, res.claimed = sqlFigures["claims-empty"], sqlFigures["claims-nonempty"], sqlFigures["rows"]
	case pubD != nil:
		after, err := scrapePublisher(ctx, metricsURL)
		if err != nil {
			return res, err
		}
		delta := func(k string) float64 { return after[k] - before[k] }
		res.empty = delta("outbox_empty_claims_total")
		res.nonEmpty = delta("outbox_claim_batch_size_count")
		res.claimed = delta("outbox_claim_batch_size_sum")
		if n := delta("outbox_claim_duration_seconds_count"); n > 0 {
			res.claimMean = time.Duration(delta("outbox_claim_duration_seconds_sum") / n * float64(time.Second))
		}
		if err := pubD.Stop(30 * time.Second); err != nil {
			return res, fmt.Errorf("%s: exit: %w (log %s)", pubD.Name, err, pubD.LogPath)
		}
		if recv != nil {
			recv.stop() // before its server
		}
		if err := psS.stop(); err != nil {
			return res, err
		}
	default:
		return res, nil
	}
	if recv != nil {
		at := recv.stop()
		for _, c := range commits {
			if c.gaveUp {
				continue
			}
			t, ok := at[c.id]
			if !ok {
				return res, fmt.Errorf("event %s was not received after the drain", c.id)
			}
			res.published = append(res.published, nonNegative(t.Sub(c.done)))
		}
		return res, nil
	}
	times, err := r.eventTimes(ctx)
	if err != nil {
		return res, err
	}
	for _, c := range commits {
		if c.gaveUp {
			continue
		}
		t := times[c.id]
		if t.published == nil {
			return res, fmt.Errorf("event %s is not published after the drain", c.id)
		}
		res.published = append(res.published, nonNegative(t.published.Sub(c.done)))
		if t.claimed != nil {
			res.waited = append(res.waited, nonNegative(t.claimed.Sub(c.done)))
			res.sent = append(res.sent, nonNegative(t.published.Sub(*t.claimed)))
		}
	}
	return res, nil
}

// startCPUBurst starts relaybench as a CPU burner (CPUBurstEnv) with the
// cost scenario's duty cycle, on the relay's CPUs when the scenario is
// pinned (-cost-cpus).
func (r *Runner) startCPUBurst(ctx context.Context) (*Daemon, error) {
	bin, why, err := r.bins.path(ctx, "relaybench")
	if err != nil {
		return nil, err
	}
	if bin == "" {
		return nil, fmt.Errorf("cpu burst: %s", why)
	}
	d, err := startDaemon(bin, "cpu-burst", r.cfg.RepoDir, r.workDir("logs"), []string{CPUBurstEnv + "=" + costBurst})
	if err != nil {
		return nil, err
	}
	// The burner is running once it has set its policy; it prints nothing,
	// so give it a moment and check it did not exit with an error.
	time.Sleep(200 * time.Millisecond)
	if err := d.Exited(); err != nil {
		return nil, err
	}
	if err := r.cfg.CostCPUs.pinDaemon(d.Pid()); err != nil {
		_ = d.Stop(5 * time.Second)
		return nil, err
	}
	return d, nil
}

// walBytes reads the server's WAL write position.
func (r *Runner) walBytes(ctx context.Context) (float64, error) {
	var b float64
	if err := r.db.Pool.QueryRow(ctx, sqlWALBytes).Scan(&b); err != nil {
		return 0, fmt.Errorf("reading the WAL position: %w", err)
	}
	return b, nil
}

// scrapePublisher reads the publisher's metrics.
func scrapePublisher(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	vals, err := relaytest.ScrapeMetrics(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("reading publisher metrics: %w", err)
	}
	return vals, nil
}

// recordCost adds one step's figures: IDs cost.<backend>.<mode>.r<rate>.*
// (cost.off.r<rate>.* for the baseline, which uses no Pub/Sub).
func (r *Runner) recordCost(backend string, m costMode, perSecond int, res costResult) {
	id := fmt.Sprintf("cost.%s.%s.r%d.", backend, m.name, perSecond)
	group := fmt.Sprintf("%s, %s, %d/s", backend, m.label, perSecond)
	if !m.relay {
		id, group, backend = fmt.Sprintf("cost.%s.r%d.", m.name, perSecond), fmt.Sprintf("%s, %d/s", m.label, perSecond), ""
	}
	addNoted := func(metric, unit, note string, v float64) {
		if math.IsNaN(v) {
			return
		}
		r.addRun(Measurement{ID: id + metric, Scenario: "cost", Name: group + ": " + metric, Group: group, Metric: metric,
			Backend: backend, Unit: unit, Note: note}, v)
	}
	add := func(metric, unit string, v float64) { addNoted(metric, unit, res.cpu.String(), v) }
	n := float64(len(res.commits) - res.gaveUp) // events written (and, with a relay, published)
	add("achieved", "commits/s", res.achieved)
	add("commit-p50", "ms", Percentile(res.commits, 50))
	addNoted("commit-p99", "ms", res.waits.String()+"; "+res.cpu.String(), Percentile(res.commits, 99))
	add("start-lag-p99", "ms", Percentile(res.startLags, 99))
	add("given-up", "commits", float64(res.gaveUp))
	add("pg-cpu-per-1k", "CPU s", res.pgCPU/n*1000)
	add("wal-per-event", "bytes", res.walBytes/n)
	line := fmt.Sprintf("  %s: committed %.0f/s; commit p50 %.1f p99 %.1f ms, %d given up; Postgres %.3f CPU s per 1,000 events, %.0f WAL bytes per event",
		group, res.achieved, Percentile(res.commits, 50), Percentile(res.commits, 99), res.gaveUp, res.pgCPU/n*1000, res.walBytes/n)
	if m.relay || m.sqlRelay {
		perClaim := math.NaN()
		if res.nonEmpty > 0 {
			perClaim = res.claimed / res.nonEmpty
		}
		add("events-per-claim", "events", perClaim)
		add("empty-claims-per-1k", "claims", res.empty/n*1000)
		add("notifications-per-1k", "notifications", res.notifications/n*1000)
		add("published-p50", "ms", Percentile(res.published, 50))
		addNoted("published-p99", "ms", res.publishedSplit()+"; "+res.cpu.String(), Percentile(res.published, 99))
		line += fmt.Sprintf("; %.1f events per claim, %.0f empty claims; published p50 %.1f p99 %.1f ms (%s)",
			perClaim, res.empty, Percentile(res.published, 50), Percentile(res.published, 99), res.publishedSplit())
	}
	r.logf("%s; %s; %s", line, res.waits, res.cpu)
	r.recordStatements(id, group, n, res.statements)
}

// publishedSplit says where commit->published went: waiting for the claim
// that took the event (up to the fetch cooldown), then from the claim to
// the mark (the claim transaction, whose mean the publisher's metrics
// give, the publish round trip, results, the mark's transaction start).
func (res costResult) publishedSplit() string {
	if len(res.waited) == 0 {
		return "no event carries its claim time"
	}
	s := fmt.Sprintf("commit->claimed_at p50 %.1f p99 %.1f ms, claimed_at->published_at p50 %.1f p99 %.1f ms",
		Percentile(res.waited, 50), Percentile(res.waited, 99), Percentile(res.sent, 50), Percentile(res.sent, 99))
	if res.claimMean > 0 {
		s += fmt.Sprintf(" (claim transaction mean %.1f ms)", res.claimMean.Seconds()*1000)
	}
	return s
}
