package publishertest

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/config"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	"github.com/eventrelay/eventrelay/outbox"
)

// Relay is an in-process relay (one replica) wired like cmd/publisher, on
// its own Pub/Sub client.
type Relay struct {
	*biz.Relay
	Config   config.Config
	Metrics  *biz.Metrics
	Registry *prometheus.Registry
	Health   *health.Health
	Store    *data.Store
	Sink     *data.Sink
	done     chan error
	stopped  bool
}

// Config is config.Default tuned for tests: fast polling, reclaim, stats
// and backoff.
func Config(worker string, ps gpubsub.Config) config.Config {
	c := config.Default()
	c.Database.URL = "postgres://unused" // tests pass their pool
	c.PubSub = ps
	o := &c.Outbox
	o.WorkerID = worker
	o.PollInterval = conf.Duration(100 * time.Millisecond)
	o.Lease = conf.Duration(10 * time.Second) // no takeover under a loaded test machine
	o.ReclaimInterval = conf.Duration(500 * time.Millisecond)
	// Replicas started together share the partitions within a few
	// heartbeats (the daemon's default is lease/4).
	o.PartitionHeartbeat = conf.Duration(200 * time.Millisecond)
	o.MaxProcessing = conf.Duration(time.Minute)
	o.BaseBackoff = conf.Duration(50 * time.Millisecond)
	o.MaxBackoff = conf.Duration(time.Second)
	o.StatsInterval = conf.Duration(200 * time.Millisecond)
	o.GracePeriod = conf.Duration(10 * time.Second)
	c.Publish.Timeout = conf.Duration(2 * time.Second)
	return c
}

// Logger logs JSON to stderr at warn level (LOG_LEVEL=debug for more).
func Logger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("LOG_LEVEL") == "debug" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// StartRelay runs a relay on pool until the test ends (drained then).
func StartRelay(t testing.TB, pool *pgxpool.Pool, cfg config.Config) *Relay {
	t.Helper()
	if cfg.Database.Schema == "" {
		cfg.Database.Schema = postgres.PoolSchema(pool)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("relay config: %v", err)
	}
	client, closeClient, err := data.NewPubSubClient(cfg.PubSub)
	if err != nil {
		t.Fatal(err)
	}
	log := Logger()
	sink, stopSink := data.NewSink(client, cfg.Publish, nil)
	reg := health.NewRegistry()
	health := health.NewHealth(time.Second)
	m, err := biz.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	store := data.NewStore(pool)
	listener := data.NewListener(pool, outbox.NotifyChannelFor(postgres.PoolSchema(pool)), cfg.Outbox.Listen, log)
	relay, err := biz.NewRelay(cfg.Outbox, store, sink, listener, health, m, log)
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Relay: relay, Config: cfg, Metrics: m, Registry: reg, Health: health, Store: store, Sink: sink, done: make(chan error, 1)}
	go func() { r.done <- relay.Run(context.Background()) }()
	t.Cleanup(func() {
		r.Stop(t)
		stopSink()
		closeClient()
	})
	return r
}

// Stop drains the relay (once) and waits for Run to return.
func (r *Relay) Stop(t testing.TB) {
	t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), r.Config.Outbox.GracePeriod.D())
	defer cancel()
	if err := r.Drain(ctx); err != nil {
		t.Errorf("draining relay %s: %v", r.WorkerID(), err)
	}
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

// AllPartitions lists every outbox partition, for claims and reclaims made
// directly through the store (a replica that owns them all).
func AllPartitions(t testing.TB, s *data.Store) []int32 {
	t.Helper()
	owners, err := s.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parts := make([]int32, len(owners))
	for i, o := range owners {
		parts[i] = o.Partition
	}
	return parts
}
