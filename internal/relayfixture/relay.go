package relayfixture

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/relay"
)

// Relay is an in-process relay (one replica) on its own Pub/Sub client.
type Relay struct {
	*relay.Relay
	Config   Config
	Registry *prometheus.Registry
	Health   *health.Health
	cancel   context.CancelFunc
	done     chan error
	stopped  bool
}

// Config is a relay's options and the Pub/Sub it publishes to.
type Config struct {
	relay.Options
	PubSub gpubsub.Config
}

// NewConfig is the relay's defaults tuned for tests: fast polling,
// reclaim, stats and backoff.
func NewConfig(worker string, ps gpubsub.Config) Config {
	return Config{PubSub: ps, Options: relay.Options{
		WorkerID:        worker,
		PollInterval:    100 * time.Millisecond,
		Lease:           10 * time.Second, // no takeover under a loaded test machine
		ReclaimInterval: 500 * time.Millisecond,
		// Replicas started together share the partitions within a few
		// heartbeats (the default is Lease/4).
		PartitionHeartbeat: 200 * time.Millisecond,
		MaxProcessing:      time.Minute,
		BaseBackoff:        50 * time.Millisecond,
		MaxBackoff:         time.Second,
		StatsInterval:      200 * time.Millisecond,
		DrainTimeout:       10 * time.Second,
		Publish:            relay.PublishOptions{Timeout: 2 * time.Second},
	}}
}

// Logger logs JSON to stderr at warn level (LOG_LEVEL=debug for more).
func Logger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("LOG_LEVEL") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// StartRelay runs a relay on pool (Options.Schema empty: the pool's
// search_path) until the test ends (drained then).
func StartRelay(t testing.TB, pool *pgxpool.Pool, cfg Config) *Relay {
	t.Helper()
	client, err := gpubsub.NewClient(context.Background(), cfg.PubSub)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Options
	reg := health.NewRegistry()
	h := health.NewHealth(time.Second)
	o.Registerer, o.Health = reg, h
	if o.Logger == nil {
		o.Logger = Logger()
	}
	rl, err := relay.New(pool, client, o)
	if err != nil {
		_ = client.Close()
		t.Fatalf("relay options: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{Relay: rl, Config: cfg, Registry: reg, Health: h, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- rl.Run(ctx) }()
	t.Cleanup(func() {
		r.Stop(t)
		_ = client.Close()
	})
	return r
}

// Stop drains the relay (once, within its grace period) and waits for Run
// to return.
func (r *Relay) Stop(t testing.TB) {
	t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("relay %s: %v", r.WorkerID(), err)
	}
}

// WaitFor polls cond every 20ms until it holds or timeout passes.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CountStatus counts outbox rows in status.
func CountStatus(t testing.TB, pool *pgxpool.Pool, status string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE status = $1`, status).Scan(&n); err != nil {
		t.Fatalf("counting %s rows: %v", status, err)
	}
	return n
}

// CountInFlight counts the rows claimed by a publisher and not settled
// yet (pending with a claim's lock_token).
func CountInFlight(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE status = 'pending' AND lock_token IS NOT NULL`).Scan(&n); err != nil {
		t.Fatalf("counting rows in flight: %v", err)
	}
	return n
}

// AllPartitions lists every outbox partition, for claims and reclaims made
// directly through the claim store (a replica that owns them all).
func AllPartitions(t testing.TB, pool *pgxpool.Pool) []int32 {
	t.Helper()
	owners, err := outboxdb.New(pool).ListOutboxPartitions(context.Background())
	if err != nil {
		t.Fatalf("listing outbox partitions: %v", err)
	}
	parts := make([]int32, len(owners))
	for i, o := range owners {
		parts[i] = o.Partition
	}
	return parts
}
