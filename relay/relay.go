package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
)

// checkTimeout bounds each readiness probe of a Health the relay creates
// for itself (when Options.Health is nil).
const checkTimeout = 2 * time.Second

// Relay publishes the committed rows of one schema's outbox_events to
// Pub/Sub in per-aggregate order and records the outcome. Several relays
// (replicas, processes) may run on one outbox at once. A Relay runs once:
// either Run, or Start and Stop (a Kratos transport.Server).
type Relay struct {
	engine *biz.Relay
	health *health.Health
	grace  time.Duration
	log    *slog.Logger

	stopSink func()
	sinkOnce sync.Once // the sink stops once, after the engine ran or was stopped
}

var _ transport.Server = (*Relay)(nil)

// New validates o (filling defaults) and returns a Relay on pool and
// client. pool's search_path must start with o.Schema (see PoolConfig);
// the relay publishes in client's project. New does not contact Postgres
// or Pub/Sub: a relay starts (not ready) while they are down. Errors name
// the offending field.
func New(pool *pgxpool.Pool, client *pubsub.Client, o Options) (*Relay, error) {
	switch {
	case pool == nil:
		return nil, errors.New("relay: pool is nil")
	case client == nil:
		return nil, errors.New("relay: Pub/Sub client is nil")
	}
	cfg, err := o.engineConfig()
	if err != nil {
		return nil, err
	}
	if err := checkPoolSchema(pool, o.Schema); err != nil {
		return nil, err
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry() // collected by nobody
	}
	m, err := biz.NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("relay: Options.Registerer: %w", err)
	}
	h := o.Health
	if h == nil {
		h = health.NewHealth(checkTimeout)
	}
	store := data.NewStore(pool)
	sink, stopSink := data.NewSink(client, cfg.publish, o.TracerProvider)
	h.AddCheck("postgres", store.Ping)
	h.AddCheck("schema", store.CheckSchema)
	h.AddCheck("pubsub", sink.Ping)
	listener := data.NewListener(pool, o.NotifyChannel, !o.ListenOff, o.Logger)
	engine, err := biz.NewRelay(cfg.outbox, store, sink, listener, h, m, o.Logger)
	if err != nil {
		stopSink()
		return nil, fmt.Errorf("relay: %w", err)
	}
	return &Relay{
		engine: engine, health: h, grace: o.GracePeriod, log: o.Logger,
		stopSink: stopSink,
	}, nil
}

// WorkerID is the locked_by of this relay's claims (Options.WorkerID or
// its default).
func (r *Relay) WorkerID() string { return r.engine.WorkerID() }

// Run runs the relay until ctx is done, then drains within GracePeriod
// (as Stop does) and returns. It returns an error only when the relay
// cannot run (e.g. it already ran).
func (r *Relay) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- r.Start(context.WithoutCancel(ctx)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stopErr := r.Stop(context.WithoutCancel(ctx))
	return errors.Join(<-done, stopErr)
}

// Start implements transport.Server: it claims and publishes, blocking
// until Stop has drained the relay (or ctx ends, which abandons in-flight
// publishes like an expired grace period; their rows are handed back).
func (r *Relay) Start(ctx context.Context) error {
	r.log.Info("outbox relay starting", "worker", r.engine.WorkerID())
	err := r.engine.Run(ctx)
	r.sinkOnce.Do(r.stopSink) // flush and stop the Pub/Sub publishers
	return err
}

// Stop implements transport.Server: it marks Options.Health draining
// (/readyz 503), stops claiming, hands claimed-but-unstarted rows back at
// once and lets in-flight batches publish and record their outcomes
// within GracePeriod (or ctx's deadline, whichever is first). Rows still
// unfinished then are handed back (another replica publishes them,
// possibly twice, never lost); Stop logs that and returns nil. It returns
// once the relay has stopped and its Pub/Sub publishers are flushed.
func (r *Relay) Stop(ctx context.Context) error {
	r.health.SetDraining()
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, r.grace)
	defer cancel()
	if err := r.engine.Drain(dctx); err != nil {
		r.log.Error("outbox relay drain incomplete", "error", err, "latency_ms", time.Since(start).Milliseconds())
	} else {
		r.log.Info("outbox relay drained", "latency_ms", time.Since(start).Milliseconds())
	}
	r.sinkOnce.Do(r.stopSink) // Drain returned after the engine's Run did
	return nil
}
