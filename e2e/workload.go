package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// WorkloadConfig shapes the mixed create/update/delete traffic.
type WorkloadConfig struct {
	// Rate is the target number of writes per second (default 300).
	Rate float64
	// Events stops the workload after this many writes were issued; when 0,
	// Duration decides.
	Events int
	// Duration of the workload when Events is 0 (default 30s).
	Duration time.Duration
	// Aggregates is how many videos are created (default 200). Creates are
	// spread over the first third of the run; updates pick a live video at
	// random; a video deleted is not written again.
	Aggregates int
	// DeleteRatio is the probability that an operation on a video that has
	// at least 3 versions deletes it (default 0.01).
	DeleteRatio float64
	// Workers is the number of concurrent HTTP clients (default 16). Each
	// video belongs to one worker, so one video's writes are sequential.
	Workers int
	// Seed makes the operation sequence reproducible (default: random).
	Seed uint64
}

func (c *WorkloadConfig) defaults() error {
	if c.Rate == 0 {
		c.Rate = 300
	}
	if c.Duration == 0 && c.Events == 0 {
		c.Duration = 30 * time.Second
	}
	if c.Aggregates == 0 {
		c.Aggregates = 200
	}
	if c.DeleteRatio == 0 {
		c.DeleteRatio = 0.01
	}
	if c.Workers == 0 {
		c.Workers = 16
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	switch {
	case c.Rate < 0:
		return fmt.Errorf("workload rate must be > 0, got %v", c.Rate)
	case c.Events < 0:
		return fmt.Errorf("workload events must be >= 0, got %d", c.Events)
	case c.Aggregates < 1:
		return fmt.Errorf("workload aggregates must be >= 1, got %d", c.Aggregates)
	case c.DeleteRatio < 0 || c.DeleteRatio > 1:
		return fmt.Errorf("workload delete ratio must be in [0,1], got %v", c.DeleteRatio)
	case c.Workers < 1:
		return fmt.Errorf("workload workers must be >= 1, got %d", c.Workers)
	}
	return nil
}

// total is the planned number of operations.
func (c *WorkloadConfig) total() int {
	if c.Events > 0 {
		return c.Events
	}
	return int(c.Rate * c.Duration.Seconds())
}

// WorkloadStats are the workload's counters (safe to read while it runs).
type WorkloadStats struct {
	Issued, Acked, Creates, Updates, Deletes atomic.Int64
	// Retries are re-sent requests after a transport error or a 5xx/503.
	Retries atomic.Int64
	// Failed are operations given up on after retrying (see LastError).
	Failed atomic.Int64
	// Rejected are 4xx answers (a harness or service bug).
	Rejected atomic.Int64

	mu      sync.Mutex
	lastErr error
}

// LastError is the last error of a failed or rejected operation.
func (s *WorkloadStats) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

func (s *WorkloadStats) setErr(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// errNoVideo: the video's create was given up on, so its later writes are too.
var errNoVideo = errors.New("its create never succeeded")

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opDelete
)

type op struct {
	kind opKind
	slot int // index of the video in the workload's table
}

// Workload drives the catalog's HTTP API.
type Workload struct {
	cfg    WorkloadConfig
	client *CatalogClient
	Stats  WorkloadStats

	ids []atomic.Pointer[uuid.UUID] // slot -> video id once created

	// ReadCheck, when set, reads every acknowledged write back with its
	// consistency token.
	ReadCheck *ReadCheck

	mu           sync.Mutex
	start, ended time.Time
}

// Elapsed is the time the workload has been (or was) running.
func (w *Workload) Elapsed() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.start.IsZero():
		return 0
	case w.ended.IsZero():
		return time.Since(w.start)
	default:
		return w.ended.Sub(w.start)
	}
}

// NewWorkload validates cfg and returns a workload against client.
func NewWorkload(cfg WorkloadConfig, client *CatalogClient) (*Workload, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Workload{cfg: cfg, client: client, ids: make([]atomic.Pointer[uuid.UUID], cfg.Aggregates)}, nil
}

// Config returns the effective configuration.
func (w *Workload) Config() WorkloadConfig { return w.cfg }

// Run issues the operations at the target rate until the plan is done or
// ctx ends, then waits for the in-flight requests. A slow system slows the
// workload down (bounded queues): the achieved rate is Acked / elapsed.
func (w *Workload) Run(ctx context.Context) {
	w.mu.Lock()
	w.start = time.Now()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.ended = time.Now()
		w.mu.Unlock()
	}()
	queues := make([]chan op, w.cfg.Workers)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan op, 64)
		wg.Add(1)
		go func(q <-chan op) {
			defer wg.Done()
			for o := range q {
				w.do(ctx, o)
			}
		}(queues[i])
	}
	w.generate(ctx, queues)
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
}

// generate decides the operation sequence and paces it.
func (w *Workload) generate(ctx context.Context, queues []chan op) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, w.cfg.Seed^0x9e3779b97f4a7c15))
	total := w.cfg.total()
	createUntil := max(total/3, w.cfg.Aggregates) // creates spread over the first third
	versions := make([]int, w.cfg.Aggregates)     // planned versions per slot; -1 deleted
	var live []int
	created := 0
	start := time.Now()
	deadline := time.Time{}
	if w.cfg.Events == 0 {
		deadline = start.Add(w.cfg.Duration)
	}
	interval := time.Duration(float64(time.Second) / w.cfg.Rate)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := 0; w.cfg.Events == 0 || n < w.cfg.Events; n++ {
		next := start.Add(time.Duration(n) * interval)
		if !deadline.IsZero() && next.After(deadline) {
			return
		}
		if d := time.Until(next); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		var o op
		switch {
		case created < w.cfg.Aggregates && (len(live) == 0 || created*createUntil <= n*w.cfg.Aggregates):
			o = op{kind: opCreate, slot: created}
			versions[created] = 1
			live = append(live, created)
			created++
		default:
			if len(live) == 0 {
				return // everything deleted
			}
			i := rng.IntN(len(live))
			slot := live[i]
			if versions[slot] >= 3 && rng.Float64() < w.cfg.DeleteRatio {
				o = op{kind: opDelete, slot: slot}
				versions[slot] = -1
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			} else {
				o = op{kind: opUpdate, slot: slot}
				versions[slot]++
			}
		}
		w.Stats.Issued.Add(1)
		select {
		case queues[o.slot%len(queues)] <- o:
		case <-ctx.Done():
			return
		}
	}
}

// do performs one operation, retrying transport errors and 5xx answers
// (the catalog is down or Postgres restarts) for up to two minutes.
func (w *Workload) do(ctx context.Context, o op) {
	backoff := 100 * time.Millisecond
	giveUp := time.Now().Add(2 * time.Minute)
	for attempt := 0; ; attempt++ {
		err := w.attempt(ctx, o, attempt)
		if err == nil {
			w.Stats.Acked.Add(1)
			switch o.kind {
			case opCreate:
				w.Stats.Creates.Add(1)
			case opUpdate:
				w.Stats.Updates.Add(1)
			case opDelete:
				w.Stats.Deletes.Add(1)
			}
			return
		}
		var he *HTTPError
		if errors.Is(err, errNoVideo) || (errors.As(err, &he) && he.Status < 500) {
			w.Stats.Rejected.Add(1)
			w.Stats.setErr(err)
			return
		}
		if ctx.Err() != nil || time.Now().After(giveUp) {
			w.Stats.Failed.Add(1)
			w.Stats.setErr(err)
			return
		}
		w.Stats.Retries.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func (w *Workload) attempt(ctx context.Context, o op, attempt int) error {
	switch o.kind {
	case opCreate:
		wr, err := w.client.CreateWritten(ctx, randomVideo(o.slot))
		if err != nil {
			return err
		}
		id, err := uuid.Parse(wr.Video.GetId())
		if err != nil {
			return fmt.Errorf("create answered video id %q: %w", wr.Video.GetId(), err)
		}
		w.ids[o.slot].Store(&id)
		w.readBack(ctx, false, wr)
		return nil
	case opUpdate:
		id := w.ids[o.slot].Load()
		if id == nil {
			return fmt.Errorf("update of slot %d: %w", o.slot, errNoVideo)
		}
		wr, err := w.client.UpdateWritten(ctx, *id, randomChange())
		if err == nil {
			w.readBack(ctx, false, wr)
		}
		return err
	default:
		id := w.ids[o.slot].Load()
		if id == nil {
			return fmt.Errorf("delete of slot %d: %w", o.slot, errNoVideo)
		}
		if w.ReadCheck != nil {
			w.ReadCheck.Deleting(*id)
		}
		wr, err := w.client.DeleteWritten(ctx, *id)
		var he *HTTPError
		if attempt > 0 && errors.As(err, &he) && he.Status == 404 {
			return nil // an earlier attempt committed; its answer was lost
		}
		if err == nil {
			w.readBack(ctx, true, wr)
		}
		return err
	}
}

func (w *Workload) readBack(ctx context.Context, deleted bool, wr Written) {
	if w.ReadCheck != nil {
		w.ReadCheck.After(ctx, deleted, wr)
	}
}

// IDs returns the ids of the videos created so far.
func (w *Workload) IDs() []uuid.UUID {
	var out []uuid.UUID
	for i := range w.ids {
		if id := w.ids[i].Load(); id != nil {
			out = append(out, *id)
		}
	}
	return out
}
