package bench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	catproj "github.com/eventrelay/eventrelay/examples/catalog-demo/projection"
	"github.com/eventrelay/eventrelay/relaytest"
)

// pstestStreams is the projector's NumGoroutines on pstest, which delivers
// about 100 messages/s per stream: 1,000/s needs at least 10.
const pstestStreams = 16

// latencyResult is one offered-load step.
type latencyResult struct {
	offered, achieved float64
	published         []time.Duration
	projected         []time.Duration
	missing           int
	pubPeak, projPeak float64
	cpu               cpuUse
	profiles          []string
}

func (l latencyResult) sustained() bool {
	return l.missing == 0 && l.achieved >= 0.95*l.offered && Percentile(l.projected, 99) < 1000
}

// runLatency measures commit->published and commit->projected at offered
// loads, with NOTIFY on and off, on pstest and the emulator, and searches
// the highest sustainable rate (NOTIFY on).
func runLatency(ctx context.Context, r *Runner) error {
	pub, why, err := r.bins.path(ctx, "publisher")
	if err != nil {
		return err
	}
	proj, why2, err := r.bins.path(ctx, "projector")
	if err != nil {
		return err
	}
	if pub == "" || proj == "" {
		r.report.skip("latency: %s%s", why, why2)
		return nil
	}
	servers := []string{"pstest"}
	if r.emu != nil {
		servers = append(servers, "emulator")
	}
	for _, server := range servers {
		for i, rtt := range r.cfg.RTTs {
			backend := latencyBackend{server, rtt}
			// With a round trip only the latency configuration (NOTIFY)
			// runs; polling and the search for the highest rate run at the
			// first round trip.
			modes := []bool{true}
			if i == 0 {
				modes = append(modes, false)
			}
			for _, notify := range modes {
				for _, rate := range r.cfg.Rates {
					for run := 1; run <= r.cfg.Runs; run++ {
						profile := ""
						if run == 1 && notify && rate == 1000 && !r.cfg.Smoke {
							profile = "latency." + backend.name() + ".notify.r1000"
						}
						res, err := r.latencyStep(ctx, backend, pub, proj, notify, rate, r.cfg.LatencyDrain, profile)
						if err != nil {
							return fmt.Errorf("%s, notify %v, %d/s: %w", backend.name(), notify, rate, err)
						}
						r.recordLatency(backend.name(), notify, strconv.Itoa(rate), fmt.Sprintf("%d/s", rate), res)
					}
				}
			}
			if r.cfg.LatencyMax && i == 0 {
				if err := r.highestSustainable(ctx, backend, pub, proj); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// latencyBackend is the Pub/Sub server of a latency step and the double's
// round trip in front of it.
type latencyBackend struct {
	server string // "pstest" or "emulator"
	rtt    time.Duration
}

func (l latencyBackend) name() string { return backendName(l.server, l.rtt) }

// highestSustainable raises the offered load by 1.5x from the lowest
// configured rate until a step is not sustained (writer behind, p99 over a
// second, or events left unprojected 5 s after the step), then records the
// last sustained step. NOTIFY on: that is the latency configuration.
func (r *Runner) highestSustainable(ctx context.Context, backend latencyBackend, pub, proj string) error {
	rate := float64(r.cfg.Rates[0])
	var best *latencyResult
	for range 10 {
		rate *= 1.5
		res, err := r.latencyStep(ctx, backend, pub, proj, true, int(rate), 5*time.Second, "")
		if err != nil {
			return err
		}
		r.logf("  %s: %.0f/s offered, %.0f/s written, projected p99 %.0f ms, %d missing: sustained %v",
			backend.name(), res.offered, res.achieved, Percentile(res.projected, 99), res.missing, res.sustained())
		if !res.sustained() {
			break
		}
		best = &res
	}
	if best == nil {
		r.report.note("latency (%s): no rate above %d/s was sustained", backend.name(), r.cfg.Rates[0])
		return nil
	}
	r.recordLatency(backend.name(), true, "max", fmt.Sprintf("highest sustained %.0f/s", best.offered), *best)
	return nil
}

func (r *Runner) recordLatency(backend string, notify bool, slug, label string, res latencyResult) {
	mode, modeName := "notify", "NOTIFY"
	if !notify {
		mode, modeName = "poll", "polling"
	}
	id := fmt.Sprintf("latency.%s.%s.r%s.", backend, mode, slug)
	group := fmt.Sprintf("%s, %s, %s", backend, modeName, label)
	add := func(metric, unit string, v float64) {
		r.addRun(Measurement{ID: id + metric, Scenario: "latency", Name: group + ": " + metric, Group: group, Metric: metric,
			Backend: backend, Unit: unit, Note: res.cpu.String(), Profile: strings.Join(res.profiles, ",")}, v)
	}
	add("achieved", "events/s", res.achieved)
	for _, p := range []struct {
		name string
		ds   []time.Duration
	}{{"published", res.published}, {"projected", res.projected}} {
		add(p.name+"-p50", "ms", Percentile(p.ds, 50))
		add(p.name+"-p99", "ms", Percentile(p.ds, 99))
		add(p.name+"-max", "ms", Percentile(p.ds, 100))
	}
	r.addRun(Measurement{ID: "memory.publisher.latency." + backend, Scenario: "memory",
		Name: "publisher (" + backend + ", offered load)", Backend: backend, Unit: "MB"}, res.pubPeak)
	r.addRun(Measurement{ID: "memory.projector.latency." + backend, Scenario: "memory",
		Name: "projector (" + backend + ", offered load)", Backend: backend, Unit: "MB"}, res.projPeak)
	r.logf("  %s: written %.0f/s; published p50 %.1f p99 %.1f max %.1f ms; projected p50 %.1f p99 %.1f max %.1f ms; %d missing; %s",
		group, res.achieved, Percentile(res.published, 50), Percentile(res.published, 99), Percentile(res.published, 100),
		Percentile(res.projected, 50), Percentile(res.projected, 99), Percentile(res.projected, 100), res.missing, res.cpu)
}

// latencyStep runs one publisher and one projector on a fresh Pub/Sub,
// writes LatencyEach worth of events at rate, waits up to drain for them to
// be projected and measures every event. With profile set, both daemons
// are CPU-profiled while the load runs.
func (r *Runner) latencyStep(ctx context.Context, backend latencyBackend, pubBin, projBin string, notify bool, rate int, drain time.Duration, profile string) (latencyResult, error) {
	res := latencyResult{offered: float64(rate)}
	var b *Backend
	var err error
	if backend.server == "pstest" {
		b, err = newPstest(ctx, backend.rtt)
	} else {
		if err = r.restartEmulator(ctx); err == nil {
			b, err = r.emu.Backend(ctx, backend.rtt)
		}
	}
	if err != nil {
		return res, err
	}
	defer b.Close()
	if err := r.db.reset(ctx); err != nil {
		return res, err
	}
	env, _, cleanup, err := r.projectorEnv(ctx, b, false)
	if err != nil {
		return res, err
	}
	defer cleanup()
	if backend.server == "pstest" {
		env = append(env, "PROJECTOR_NUM_GOROUTINES="+strconv.Itoa(pstestStreams))
	}
	logDir := r.workDir("logs")
	projD, err := startDaemon(projBin, "projector-latency", filepath.Join(r.cfg.RepoDir, demoModule), logDir, env)
	if err != nil {
		return res, err
	}
	defer projD.Stop(30 * time.Second) //nolint:errcheck
	port, err := relaytest.FreePort()
	if err != nil {
		return res, err
	}
	penv := append(r.publisherEnv(b, "publisher-latency", port), "OUTBOX_LISTEN="+strconv.FormatBool(notify))
	pubD, err := startDaemon(pubBin, "publisher-latency", r.cfg.RepoDir, logDir, penv)
	if err != nil {
		return res, err
	}
	defer pubD.Stop(30 * time.Second) //nolint:errcheck
	if err := waitReady(ctx, pubD, "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		return res, err
	}
	if err := waitReady(ctx, projD, projectorHTTP(env)); err != nil {
		return res, err
	}
	r.cpu.daemons = map[int]string{pubD.Pid(): "publisher", projD.Pid(): "projector"}
	defer func() { r.cpu.daemons = nil }()

	n := int(float64(rate) * r.cfg.LatencyEach.Seconds())
	evs, err := NewFixture(min(r.cfg.Aggregates, max(n/2, 1))).Generate(n)
	if err != nil {
		return res, err
	}
	a := r.cpu.sample()
	profiled := make(chan string, 2)
	if profile != "" {
		secs := max(1, min(5, int(r.cfg.LatencyEach.Seconds())))
		for _, d := range []*Daemon{pubD, projD} {
			go func() { profiled <- r.profileDaemon(ctx, d, profile+"."+d.Name, secs) }()
		}
	} else {
		profiled <- ""
		profiled <- ""
	}
	ws, achieved, err := writeLoad(ctx, r.db, evs, rate, notify)
	for range 2 {
		if p := <-profiled; p != "" {
			res.profiles = append(res.profiles, p)
		}
	}
	if err != nil {
		return res, err
	}
	res.achieved = achieved
	deadline := time.Now().Add(drain)
	for time.Now().Before(deadline) {
		done, err := r.db.count(ctx, sqlCountConsumer, catproj.VideosConsumer)
		if err != nil {
			return res, err
		}
		if done >= len(ws) {
			break
		}
		if err := pubD.Exited(); err != nil {
			return res, err
		}
		if err := projD.Exited(); err != nil {
			return res, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.cpu = a.to(r.cpu.sample())
	res.pubPeak, res.projPeak = pubD.PeakRSS(), projD.PeakRSS()
	return res, r.collectLatencies(ctx, ws, &res)
}

// collectLatencies measures each written event from its commit to when it
// was published and projected (eventTimes).
func (r *Runner) collectLatencies(ctx context.Context, ws []written, res *latencyResult) error {
	byID, err := r.eventTimes(ctx)
	if err != nil {
		return err
	}
	for _, w := range ws {
		t := byID[w.id]
		if t.published != nil {
			res.published = append(res.published, nonNegative(t.published.Sub(w.commitAt)))
		}
		if t.projected == nil {
			res.missing++
			continue
		}
		res.projected = append(res.projected, nonNegative(t.projected.Sub(w.commitAt)))
	}
	return nil
}

// eventTimes are when an outbox event was published and projected (nil:
// not yet).
type eventTimes struct{ claimed, published, projected *time.Time }

// eventTimes reads when each outbox event was claimed (the claim
// transaction's now(); the publishing claim's, as the mark keeps it),
// published (outbox published_at: the mark transaction's now()) and projected (its inbox row's processed_at: the
// projector transaction's now(), a few ms before its commit).
func (r *Runner) eventTimes(ctx context.Context) (map[uuid.UUID]eventTimes, error) {
	rows, err := r.db.Pool.Query(ctx, sqlEventTimes, catproj.VideosConsumer)
	if err != nil {
		return nil, fmt.Errorf("reading event times: %w", err)
	}
	defer rows.Close()
	byID := map[uuid.UUID]eventTimes{}
	for rows.Next() {
		var id uuid.UUID
		var t eventTimes
		if err := rows.Scan(&id, &t.claimed, &t.published, &t.projected); err != nil {
			return nil, fmt.Errorf("reading event times: %w", err)
		}
		byID[id] = t
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading event times: %w", err)
	}
	return byID, nil
}

// nonNegative clamps the sub-millisecond skew between the client's
// "commit returned" and the server's now() of a later transaction.
func nonNegative(d time.Duration) time.Duration { return time.Duration(math.Max(0, float64(d))) }

// waitReady polls a daemon's /readyz until it answers 200.
func waitReady(ctx context.Context, d *Daemon, addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := d.Exited(); err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready on %s after 30s (see %s)", d.Name, addr, d.LogPath)
}

// projectorHTTP finds the ops address in a projector environment.
func projectorHTTP(env []string) string {
	for _, kv := range env {
		if v, ok := cutPrefix(kv, "PROJECTOR_HTTP_PORT="); ok {
			return "127.0.0.1:" + v
		}
	}
	return ""
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}
