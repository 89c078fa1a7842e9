package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventrelay/eventrelay/consistency"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
	"github.com/eventrelay/eventrelay/settings"
)

// readWaitRates are the offered write rates of the scenario.
func (c *Config) readWaitRates() []int {
	if c.Smoke {
		return []int{200}
	}
	return []int{500, 1000}
}

// readWaitPivot is the scenario's table: one row per round trip and rate.
var readWaitPivot = pivot{"readwait",
	"Read-your-writes: the wait a read with the write's consistency token adds (consistency.Waiter, default 2s bound), " +
		"measured from the write's commit; writer, relay and projector in one process (public packages, internal/testevent items), " +
		"pstest behind the strict double; no wait: answered by the waiter's first look-up; CPU seconds per 1,000 events " +
		"(bench process: writer, relay, projector, waiter, pstest and the double; Postgres); medians of the runs, p99 range in brackets:",
	[]string{"Round trip, offered writes", "Written/s", "Wait p50", "p99", "max", "No wait %", "Timeouts", "Bench CPU s / 1k", "Postgres CPU s / 1k"},
	[]string{"achieved", "wait-p50", "wait-p99", "wait-max", "no-wait-pct", "timeouts", "bench-cpu-per-1k", "pg-cpu-per-1k"}}

// readWaitResult is one step: every write's wait.
type readWaitResult struct {
	achieved float64
	waits    []time.Duration
	noWait   int
	timeouts int
	cpu      cpuUse
}

// runReadWait measures the wait read-your-writes adds to a read: a writer
// commits items through outbox.Writer at a paced rate, the relay publishes
// them, the projector applies them to a Postgres read model and announces
// each batch; right after each commit a read waits for the write's token
// with consistency.Waiter. At every round trip of the strict double and
// every rate.
func runReadWait(ctx context.Context, r *Runner) error {
	for _, rtt := range r.cfg.RTTs {
		for _, rate := range r.cfg.readWaitRates() {
			for range r.cfg.Runs {
				res, err := r.readWaitStep(ctx, rtt, rate)
				if err != nil {
					return fmt.Errorf("%s, %d/s: %w", backendName("pstest", rtt), rate, err)
				}
				r.recordReadWait(backendName("pstest", rtt), rate, res)
			}
		}
	}
	return nil
}

func (r *Runner) recordReadWait(backend string, rate int, res readWaitResult) {
	group := fmt.Sprintf("%s, %d/s", backend, rate)
	add := func(metric, unit string, v float64) {
		r.addRun(Measurement{ID: fmt.Sprintf("readwait.%s.r%d.%s", backend, rate, metric), Scenario: "readwait",
			Name: group + ": " + metric, Group: group, Metric: metric, Backend: backend, Unit: unit, Note: res.cpu.String()}, v)
	}
	n := float64(len(res.waits))
	add("achieved", "events/s", res.achieved)
	add("wait-p50", "ms", Percentile(res.waits, 50))
	add("wait-p99", "ms", Percentile(res.waits, 99))
	add("wait-max", "ms", Percentile(res.waits, 100))
	add("no-wait-pct", "%", 100*float64(res.noWait)/max(n, 1))
	add("timeouts", "reads", float64(res.timeouts))
	per1k := func(group string) float64 { return res.cpu.Cores[group] * res.cpu.Seconds / max(n, 1) * 1000 }
	add("bench-cpu-per-1k", "s", per1k("bench"))
	add("pg-cpu-per-1k", "s", per1k("postgres"))
	r.logf("  readwait %s: written %.0f/s; wait p50 %.1f p99 %.1f max %.1f ms; no wait %.1f%%; %d timeouts; %s",
		group, res.achieved, Percentile(res.waits, 50), Percentile(res.waits, 99), Percentile(res.waits, 100),
		100*float64(res.noWait)/max(n, 1), res.timeouts, res.cpu)
}

// readWaitStep runs the pipeline in process on a fresh pstest at rtt and
// writes LatencyEach worth of items at rate, each followed by a read that
// waits for it.
func (r *Runner) readWaitStep(ctx context.Context, rtt time.Duration, rate int) (readWaitResult, error) {
	var res readWaitResult
	b, err := newPstest(ctx, rtt)
	if err != nil {
		return res, err
	}
	defer b.Close()
	if err := r.db.reset(ctx); err != nil {
		return res, err
	}
	// Writers, relay, projector and reads each get their own pool, as
	// they would in their own processes: a read's look-up never queues
	// behind the writers' connections.
	pools := map[string]*pgxpool.Pool{}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	for _, name := range []string{"writers", "relay", "projector", "reads"} {
		p, err := settings.OpenPool(ctx, r.db.Config(), 16)
		if err != nil {
			return res, err
		}
		pools[name] = p
	}
	pool := r.db.Pool
	for _, sql := range []string{sqlResetPartitions, sqlResetPublishers,
		sqlCreateItems, `TRUNCATE ` + itemsTable} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			return res, fmt.Errorf("preparing the read model: %w", err)
		}
	}
	if err := b.EnsureTopic(ctx, testevent.Topic); err != nil {
		return res, err
	}
	dlq, err := b.CreateTopic(ctx, "readwait-dlq")
	if err != nil {
		return res, err
	}
	sub, err := b.CreateSubscription(ctx, testevent.Topic, true)
	if err != nil {
		return res, err
	}

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	rl, err := relay.New(pools["relay"], b.Client, relay.Options{Schema: Schema, Logger: log})
	if err != nil {
		return res, err
	}
	p, err := projector.New(pools["projector"], b.Client, projector.Options{Schema: Schema, Logger: log,
		Receive: projector.ReceiveOptions{NumGoroutines: pstestStreams}})
	if err != nil {
		return res, err
	}
	reg, err := itemsRegistry(benchItems, testeventTypes())
	if err != nil {
		return res, err
	}
	if err := p.Register(projector.Projection{Name: itemsModel, Subscription: sub, DeadLetterTopic: dlq, Tx: reg,
		Tables: []string{itemsTable}}); err != nil {
		return res, err
	}
	w := consistency.NewWaiter(pools["reads"], consistency.WaiterOptions{Logger: log})
	w.Register(itemsModel, readWaitLookup(pools["reads"]))

	// Relay and projector run until runCtx ends, then drain.
	runCtx, stop := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { w.Run(runCtx) })
	bg.Go(func() { _ = rl.Run(runCtx) })
	bg.Go(func() { _ = p.Run(runCtx) })
	defer func() { stop(); bg.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); !w.Listening(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return res, errors.New("the consistency waiter did not LISTEN within 10s")
		}
	}

	ow, err := outbox.NewWriter(outbox.Config{Encoder: testevent.Encode, DefaultTopic: testevent.Topic, Notify: true})
	if err != nil {
		return res, err
	}
	// One item through the whole pipeline first: the subscription's
	// streams and the relay's partitions are up before the clock runs.
	warm := testevent.Item("warm-up", 1, 0)
	if err := pgx.BeginFunc(ctx, pools["writers"], func(tx pgx.Tx) error { _, err := ow.InsertTx(ctx, tx, warm); return err }); err != nil {
		return res, fmt.Errorf("warm-up write: %w", err)
	}
	if err := w.Wait(ctx, itemsModel, []consistency.Token{{AggregateType: warm.AggregateType, AggregateID: warm.AggregateID, AggregateVersion: 1}}, 10*time.Second); err != nil {
		return res, fmt.Errorf("warm-up item not projected: %w", err)
	}

	a := r.cpu.sample()
	res, err = readWaitLoad(ctx, pools["writers"], ow, w, rate, int(float64(rate)*r.cfg.LatencyEach.Seconds()), r.cfg.Aggregates)
	res.cpu = a.to(r.cpu.sample())
	return res, err
}

// readWaitLoad commits n items at perSecond (open loop: each write starts at its
// time, one goroutine per write; one aggregate's writes are serialized as a
// row lock would) and, right after each commit, waits for its token.
func readWaitLoad(ctx context.Context, pool *pgxpool.Pool, ow *outbox.Writer, w *consistency.Waiter, perSecond, n, aggregates int) (readWaitResult, error) {
	var res readWaitResult
	aggregates = max(1, min(aggregates, n/2))
	locks := make([]sync.Mutex, aggregates)
	versions := make([]int64, aggregates)
	type outcome struct {
		wait           time.Duration
		noWait, failed bool
		timeout        bool
		committedAt    time.Time
	}
	out := make([]outcome, n)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := time.Now()
	interval := time.Second / time.Duration(perSecond)
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			agg := i % aggregates
			id := testevent.ID(agg)
			locks[agg].Lock()
			versions[agg]++
			v := versions[agg]
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := ow.InsertTx(ctx, tx, testevent.Item(id, v, itemsPadding))
				return err
			})
			locks[agg].Unlock()
			if err != nil {
				cancel(fmt.Errorf("writing %s v%d: %w", id, v, err))
				out[i].failed = true
				return
			}
			committed := time.Now()
			pr := &lookupProbe{}
			err = w.Wait(context.WithValue(ctx, lookupProbeKey{}, pr), itemsModel,
				[]consistency.Token{{AggregateType: testevent.AggregateType, AggregateID: id, AggregateVersion: v}}, 0)
			o := outcome{wait: time.Since(committed), noWait: pr.looked && pr.first >= v, committedAt: committed}
			switch {
			case errors.Is(err, consistency.ErrTimeout):
				o.timeout = true
			case err != nil:
				cancel(fmt.Errorf("waiting for %s v%d: %w", id, v, err))
				o.failed = true
			}
			out[i] = o
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	var last time.Time
	for _, o := range out {
		if o.failed {
			continue
		}
		res.waits = append(res.waits, o.wait)
		if o.noWait {
			res.noWait++
		}
		if o.timeout {
			res.timeouts++
		}
		if o.committedAt.After(last) {
			last = o.committedAt
		}
	}
	res.achieved = rate(len(res.waits), last.Sub(start))
	return res, nil
}

// lookupProbe records what a Wait's first look-up found: a read whose
// token it satisfied did not wait for an announcement.
type lookupProbe struct {
	looked bool
	first  int64
}

type lookupProbeKey struct{}

// readWaitLookup reads the version the read model holds for an item and
// notes the first answer in the Wait's probe (Wait looks up in its own
// goroutine).
func readWaitLookup(pool *pgxpool.Pool) consistency.Lookup {
	return func(ctx context.Context, _, id string) (int64, error) {
		var v int64
		err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+itemsTable+` WHERE item_id = $1`, id).Scan(&v)
		if pr, ok := ctx.Value(lookupProbeKey{}).(*lookupProbe); ok && !pr.looked && err == nil {
			pr.looked, pr.first = true, v
		}
		return v, err
	}
}
