package health

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Check probes one dependency; nil means reachable.
type Check func(ctx context.Context) error

// Health tracks loop liveness, dependency readiness and draining. It is
// safe for concurrent use.
type Health struct {
	*state
	// advisory: AddCheck registers checks that do not fail readiness.
	advisory bool
}

// state is what a Health and its Advisory view share.
type state struct {
	mu       sync.Mutex
	loops    map[string]*loop
	checks   map[string]check
	draining atomic.Bool
	timeout  time.Duration
	ready    readiness
}

type check struct {
	probe    Check
	advisory bool
}

type loop struct {
	maxSilence time.Duration
	last       atomic.Int64 // unix nanos
}

// NewHealth returns an empty Health whose checks each get checkTimeout
// (default 2s).
func NewHealth(checkTimeout time.Duration) *Health {
	if checkTimeout <= 0 {
		checkTimeout = 2 * time.Second
	}
	return &Health{state: &state{loops: map[string]*loop{}, checks: map[string]check{}, timeout: checkTimeout}}
}

// Advisory returns a view of h sharing its loops, checks and draining, on
// which AddCheck registers advisory checks: /readyz lists their failures
// under "degraded" and still passes. A service that embeds the relay or
// the projector gives them this view, so that a Pub/Sub outage or a
// stalled projection (which its alerts report) does not take the
// service's own API out of rotation; their loops still count for
// /healthz.
func (h *Health) Advisory() *Health { return &Health{state: h.state, advisory: true} }

// RegisterLoop declares a loop that must Tick at least every maxSilence for
// /healthz to pass. The loop counts as ticking from registration.
func (h *Health) RegisterLoop(name string, maxSilence time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := &loop{maxSilence: maxSilence}
	l.last.Store(time.Now().UnixNano())
	h.loops[name] = l
}

// Tick records that the named loop made progress.
func (h *Health) Tick(name string) {
	h.mu.Lock()
	l := h.loops[name]
	h.mu.Unlock()
	if l != nil {
		l.last.Store(time.Now().UnixNano())
	}
}

// AddCheck registers a readiness check (e.g. "postgres", "pubsub").
func (h *Health) AddCheck(name string, c Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks[name] = check{probe: c, advisory: h.advisory}
}

// SetDraining marks the process as shutting down: /readyz fails from now on.
func (h *Health) SetDraining() { h.draining.Store(true) }

// Draining reports whether SetDraining was called.
func (h *Health) Draining() bool { return h.draining.Load() }

// Report is the body of /healthz and /readyz.
type Report struct {
	OK       bool              `json:"ok"`
	Draining bool              `json:"draining,omitempty"`
	Failures map[string]string `json:"failures,omitempty"`
	// Degraded are the failing advisory checks (see Advisory): reported,
	// not failing readiness.
	Degraded map[string]string `json:"degraded,omitempty"`
}

// Live reports whether every loop ticked recently enough.
func (h *Health) Live() Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := Report{OK: true}
	now := time.Now()
	for name, l := range h.loops {
		silent := now.Sub(time.Unix(0, l.last.Load()))
		if silent > l.maxSilence {
			r.fail(name, "no tick for "+silent.Truncate(time.Millisecond).String())
		}
	}
	return r
}

// Ready runs every check concurrently (each bounded by the check timeout)
// and reports draining.
func (h *Health) Ready(ctx context.Context) Report {
	h.mu.Lock()
	names := make([]string, 0, len(h.checks))
	for n := range h.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	checks := make([]check, len(names))
	for i, n := range names {
		checks[i] = h.checks[n]
	}
	h.mu.Unlock()

	r := Report{OK: true, Draining: h.Draining()}
	if r.Draining {
		r.fail("draining", "shutting down")
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, h.timeout)
			defer cancel()
			errs[i] = c.probe(cctx)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case err == nil:
		case checks[i].advisory:
			if r.Degraded == nil {
				r.Degraded = map[string]string{}
			}
			r.Degraded[names[i]] = err.Error()
		default:
			r.fail(names[i], err.Error())
		}
	}
	return r
}

// LogFailing runs the named checks once (each bounded by the check
// timeout) and logs every failure at error level: a daemon calls it at
// start so that a misconfiguration /readyz would only report (e.g. an
// unmigrated schema) is in the log too.
func (h *Health) LogFailing(ctx context.Context, log *slog.Logger, names ...string) {
	for _, name := range names {
		h.mu.Lock()
		c, ok := h.checks[name]
		h.mu.Unlock()
		if !ok {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, h.timeout)
		err := c.probe(cctx)
		cancel()
		if err != nil {
			log.Error("not ready: "+name, "check", name, "error", err.Error())
		}
	}
}

func (r *Report) fail(name, why string) {
	r.OK = false
	if r.Failures == nil {
		r.Failures = map[string]string{}
	}
	r.Failures[name] = why
}
