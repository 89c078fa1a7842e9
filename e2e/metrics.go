package e2e

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/eventrelay/eventrelay/relaytest"
)

// Scraper polls the /metrics endpoints of supervised daemons and keeps
// counter totals across restarts: when a process is replaced, the last
// values scraped from the old one are banked. What an instance counted
// after its last scrape and before a SIGKILL is lost, so totals from a run
// with kills are lower bounds (the scrape interval bounds the gap).
type Scraper struct {
	mu      sync.Mutex
	targets []*scrapeTarget
}

type scrapeTarget struct {
	proc *Proc
	url  string
	// pid of the instance last scraped, its counters, and the banked sums
	// of earlier instances.
	pid    int
	last   map[string]float64
	banked map[string]float64
}

// NewScraper returns an empty scraper.
func NewScraper() *Scraper {
	return &Scraper{}
}

// Add scrapes url for proc from now on.
func (s *Scraper) Add(proc *Proc, url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.targets = append(s.targets, &scrapeTarget{proc: proc, url: url, last: map[string]float64{}, banked: map[string]float64{}})
}

// Run scrapes every interval until ctx ends.
func (s *Scraper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.ScrapeAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ScrapeAll scrapes every running target once (call it right before a
// graceful stop to bank an instance's final counts).
func (s *Scraper) ScrapeAll(ctx context.Context) {
	s.mu.Lock()
	targets := append([]*scrapeTarget(nil), s.targets...)
	s.mu.Unlock()
	for _, t := range targets {
		pid := t.proc.PID()
		if !t.proc.Running() {
			continue
		}
		vals, err := scrape(ctx, t.url)
		if err != nil {
			continue // down or restarting; next round
		}
		s.mu.Lock()
		if pid != t.pid {
			for k, v := range t.last {
				t.banked[k] += v
			}
			t.pid = pid
		}
		t.last = vals
		s.mu.Unlock()
	}
}

// Sum is the total over all targets and instances of the counter or gauge
// samples whose name is name and whose labels include every pair in labels
// ("k=v").
func (s *Scraper) Sum(name string, labels ...string) float64 {
	return s.SumWhere("", name, labels...)
}

// SumWhere sums like Sum over the targets whose process name has prefix.
func (s *Scraper) SumWhere(procPrefix, name string, labels ...string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum float64
	for _, t := range s.targets {
		if !strings.HasPrefix(t.proc.Name(), procPrefix) {
			continue
		}
		for _, m := range []map[string]float64{t.banked, t.last} {
			for k, v := range m {
				if sampleMatches(k, name, labels) {
					sum += v
				}
			}
		}
	}
	return sum
}

// Last is the value last scraped from the current instance of the
// process named procName (for gauges, which must not be summed across
// instances).
func (s *Scraper) Last(procName, name string, labels ...string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum float64
	for _, t := range s.targets {
		if t.proc.Name() != procName {
			continue
		}
		for k, v := range t.last {
			if sampleMatches(k, name, labels) {
				sum += v
			}
		}
	}
	return sum
}

// Names lists the metric names seen, for discovering what daemons export.
func (s *Scraper) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, t := range s.targets {
		for k := range t.last {
			n, _, _ := strings.Cut(k, "{")
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// scrape reads url's samples within 2 s.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return relaytest.ScrapeMetrics(ctx, url)
}

func sampleMatches(key, name string, labels []string) bool {
	n, rest, _ := strings.Cut(key, "{")
	if n != name {
		return false
	}
	rest = strings.TrimSuffix(rest, "}")
	have := map[string]bool{}
	for _, p := range strings.Split(rest, ",") {
		have[p] = true
	}
	for _, l := range labels {
		if !have[l] {
			return false
		}
	}
	return true
}
