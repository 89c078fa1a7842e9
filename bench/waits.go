package bench

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// costWriterApp is the application_name of the cost scenario's writer
// connections, by which waitSampler finds their backends.
const costWriterApp = "eventrelay-bench-writer"

// waitEvery is waitSampler's interval: about 500 looks at the writers
// over a 10 s step, at a cost to Postgres of a fraction of a millisecond
// each (the same in every mode).
const waitEvery = 20 * time.Millisecond

// withApplicationName returns the postgres:// URL u with application_name
// set to name.
func withApplicationName(u, name string) (string, error) {
	p, err := url.Parse(u)
	if err != nil {
		return "", fmt.Errorf("database url: %w", err)
	}
	q := p.Query()
	q.Set("application_name", name)
	p.RawQuery = q.Encode()
	return p.String(), nil
}

// waitSampler is a wait-event profile of a set of backends: it looks at
// pg_stat_activity every waitEvery and counts, for each of the backends
// that is running a statement, what it waits for ("CPU" when nothing).
// It is where a commit's latency goes on the server side: WAL flushes
// (IO/WALSync, and LWLock/WALWrite behind another backend's flush), locks,
// or running.
type waitSampler struct {
	loop *periodic

	mu     sync.Mutex
	counts map[string]int
	looks  int
}

const sqlActiveWaits = `SELECT coalesce(wait_event_type || '/' || wait_event, 'CPU')
FROM pg_stat_activity
WHERE application_name = $1 AND state = 'active'`

// startWaitSampler samples the backends whose application_name is app,
// through pool, until Stop.
func startWaitSampler(ctx context.Context, pool *pgxpool.Pool, app string) *waitSampler {
	s := &waitSampler{counts: map[string]int{}}
	s.loop = runEvery(ctx, waitEvery, func(ctx context.Context) error { return s.look(ctx, pool, app) })
	return s
}

func (s *waitSampler) look(ctx context.Context, pool *pgxpool.Pool, app string) error {
	rows, err := pool.Query(ctx, sqlActiveWaits, app)
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := map[string]int{}
	for rows.Next() {
		var w string
		if err := rows.Scan(&w); err != nil {
			return err
		}
		seen[w]++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.looks++
	for w, n := range seen {
		s.counts[w] += n
	}
	return nil
}

// Stop ends the sampling and returns the profile.
func (s *waitSampler) Stop() (waitProfile, error) {
	if err := s.loop.stop(); err != nil {
		return waitProfile{}, fmt.Errorf("sampling pg_stat_activity: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return waitProfile{counts: s.counts, looks: s.looks}, nil
}

// waitProfile is what waitSampler saw: backend samples per wait event.
type waitProfile struct {
	counts map[string]int
	looks  int
}

// String lists the wait events by their share of the busy samples, and
// how busy the backends were (busy samples per look).
func (p waitProfile) String() string {
	busy := 0
	type kv struct {
		k string
		n int
	}
	var l []kv
	for k, n := range p.counts {
		busy += n
		l = append(l, kv{k, n})
	}
	if p.looks == 0 || busy == 0 {
		return "writers' backends: never seen running a statement"
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || l[i].n == l[j].n && l[i].k < l[j].k })
	parts := make([]string, 0, len(l))
	for _, x := range l {
		if share := float64(x.n) / float64(busy); share >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", x.k, 100*share))
		}
	}
	return fmt.Sprintf("writers' backends running a statement, %.2f per look (every %s, %d looks): %s",
		float64(busy)/float64(p.looks), waitEvery, p.looks, strings.Join(parts, ", "))
}
