package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/go-kratos/kratos/v2/transport"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relay/internal/backoff"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relay/internal/logread"
	"github.com/eventrelay/eventrelay/relay/internal/partitions"
	"github.com/eventrelay/eventrelay/relay/internal/publish"
	"github.com/eventrelay/eventrelay/relay/internal/upkeep"
	"github.com/eventrelay/eventrelay/relay/internal/wakeup"
)

// checkTimeout bounds each readiness probe of a Health the relay creates
// for itself (when Options.Health is nil).
const checkTimeout = 2 * time.Second

// loopName is the relay's loop in /healthz.
const loopName = "outbox-relay"

// Relay publishes the committed rows of one schema's outbox_events to
// Pub/Sub in per-aggregate order and records the outcome. Several relays
// (replicas, processes) may run on one outbox at once. A Relay runs once:
// either Run, or Start and Stop (a Kratos transport.Server).
//
// Inside, one claim loop hands batches to up to Concurrency workers;
// partition ownership, reclaim, stats and retention run beside it (see
// docs/design.md for the protocol).
type Relay struct {
	opts    Options // defaults filled, validated
	claims  claims
	upkeep  outboxUpkeep
	pub     publisher
	wakeup  wakeups
	live    liveness
	health  *health.Health
	m       *metrics
	log     *slog.Logger
	backoff backoff.Policy
	own     *partitions.Ownership // the partitions this replica claims from
	blocks  *holds                // topics held: Pub/Sub or its environment failed
	stored  *holds                // statements Postgres refuses for a missing privilege
	stall   stallWatch            // no publish while old rows wait
	subs    *subscriptionWatch    // topics held while a declared subscription is detached

	// ModeLog only.
	logStore    *logread.Store
	logm        *logMetrics
	replConfig  *pgconn.Config // the pool's address and credentials, for replication connections
	logAttempts logAttempts
	logFault    atomic.Pointer[string] // why the last session failed (nil: it did not)

	stopPublisher func()
	publisherOnce sync.Once // the publisher stops once, after the engine ran or was stopped

	wake         chan struct{} // capacity 1: coalesced wake-ups
	stopClaiming chan struct{} // closed by drain
	stopOnce     sync.Once
	work         context.Context // canceled when the grace period ends
	abandon      context.CancelFunc
	workers      sync.WaitGroup

	mu      sync.Mutex
	started bool
	done    chan struct{} // closed when run returns
}

var _ transport.Server = (*Relay)(nil)

// New validates o (filling defaults) and returns a Relay on pool and
// client. pool's search_path must start with o.Schema (see PoolConfig);
// an empty o.Schema is taken from it. The relay publishes in client's
// project. New does not contact Postgres or Pub/Sub: a relay starts (not
// ready) while they are down. Errors name the offending field.
func New(pool *pgxpool.Pool, client *pubsub.Client, o Options) (*Relay, error) {
	switch {
	case pool == nil:
		return nil, errors.New("relay: pool is nil")
	case client == nil:
		return nil, errors.New("relay: Pub/Sub client is nil")
	}
	o = o.WithDefaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	schema, err := poolSchema(pool, o.Schema)
	if err != nil {
		return nil, err
	}
	o.Schema = schema
	if o.NotifyChannel == "" {
		o.NotifyChannel = outbox.NotifyChannelFor(o.Schema)
		if err := outbox.CheckNotifyChannel(o.NotifyChannel); err != nil {
			return nil, optionErrorf("NotifyChannel", "is invalid: %v", err)
		}
	}
	if o.Mode == ModeLog {
		if err := o.logNames(); err != nil {
			return nil, err
		}
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry() // collected by nobody
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("relay: Options.Registerer: %w", err)
	}
	var logm *logMetrics
	if o.Mode == ModeLog {
		if logm, err = newLogMetrics(reg); err != nil {
			return nil, fmt.Errorf("relay: Options.Registerer: %w", err)
		}
	}
	h := o.Health
	if h == nil {
		h = health.NewHealth(checkTimeout)
	}
	cs := claim.NewStore(pool)
	pub, stopPublisher := publish.New(client, o.Publish.publishSettings(), o.TracerProvider)
	h.AddCheck("postgres", cs.Ping)
	if o.Mode == ModeLog {
		h.AddCheck("schema", func(ctx context.Context) error { return logread.CheckSchema(ctx, pool) })
	} else {
		h.AddCheck("schema", cs.CheckSchema)
	}
	h.AddCheck("pubsub", pub.Ping)
	bo := backoff.Policy{Base: o.BaseBackoff, Max: o.MaxBackoff, Full: o.Jitter == "full"}
	blocks := newHolds("topic", holdPolicy(bo), m.PublishBlocked)
	stored := newHolds("statement", holdPolicy(bo), m.StoreBlocked)
	h.AddCheck("store_blocked", stored.Check)
	h.AddCheck("publish_blocked", blocks.Check)
	log := o.Logger.With("worker", o.WorkerID)
	subs := newSubscriptionWatch(client, o, m.SubsDetached, log)
	h.AddCheck("subscriptions", subs.Check)
	work, abandon := context.WithCancel(context.Background())
	r := &Relay{
		opts: o, claims: cs, upkeep: upkeep.NewStore(pool), pub: pub,
		wakeup: wakeup.NewListener(pool, o.NotifyChannel, !o.ListenOff, o.Logger),
		live:   h, health: h, m: m, log: log,
		backoff: bo, blocks: blocks, stored: stored, subs: subs,
		own: partitions.NewOwnership(partitions.NewStore(pool), o.WorkerID, o.Lease, o.PartitionHeartbeat,
			m.partitions(), log),
		stopPublisher: stopPublisher,
		wake:          make(chan struct{}, 1),
		stopClaiming:  make(chan struct{}),
		work:          work,
		abandon:       abandon,
		done:          make(chan struct{}),
	}
	r.own.Announce = r.announcePartitions
	if o.Mode == ModeLog {
		r.logStore, r.logm = logread.NewStore(pool, o.Schema), logm
		r.replConfig = pool.Config().ConnConfig.Config.Copy()
		r.logAttempts.n = map[uuid.UUID]int32{}
		h.AddCheck("log_stream", r.logCheck)
	}
	if !o.StallAfterOff && o.Mode == ModePoll { // ModeLog has no gauges of pending rows
		h.AddCheck("stall", r.stallCheck)
	}
	// The loop ticks at least every poll interval, and a claim is bounded
	// by the lease; allow generous slack before /healthz fails.
	h.RegisterLoop(loopName, 3*o.PollInterval+2*o.Lease)
	return r, nil
}

// WorkerID is the locked_by of this relay's claims (Options.WorkerID or
// its default).
func (r *Relay) WorkerID() string { return r.opts.WorkerID }

// Run runs the relay until ctx is done, then drains within DrainTimeout
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
	r.log.Info("outbox relay starting")
	err := r.run(ctx)
	r.publisherOnce.Do(r.stopPublisher) // flush and stop the Pub/Sub publishers
	return err
}

// Stop implements transport.Server: it marks Options.Health draining
// (/readyz 503), stops claiming, hands claimed-but-unstarted rows back at
// once and lets in-flight batches publish and record their outcomes
// within DrainTimeout (or ctx's deadline, whichever is first). Rows still
// unfinished then are handed back (another replica publishes them,
// possibly twice, never lost); Stop logs that and returns nil. It returns
// once the relay has stopped and its Pub/Sub publishers are flushed. A ctx
// deadline that leaves less than DrainTimeout (a Kratos app's stop timeout
// is 10s unless kratos.StopTimeout sets it) is logged as a warning naming
// both values.
func (r *Relay) Stop(ctx context.Context) error {
	r.health.SetDraining()
	start := time.Now()
	// The deadline left is compared with the drain's own budget: an app
	// whose stop timeout equals StopTimeout has slightly less left here.
	if deadline, ok := ctx.Deadline(); ok && deadline.Sub(start) < r.opts.DrainTimeout {
		r.log.Warn("the app's stop timeout leaves the relay's drain less than its grace period: rows still in flight are handed back and may be published twice; "+
			"give the app a stop timeout of at least DrainTimeout + Lease (kratos.StopTimeout(relay.Options.StopTimeout()))",
			"stop_timeout", deadline.Sub(start).Round(100*time.Millisecond).String(), "drain", r.opts.StopTimeout().String(),
			"drain_timeout", r.opts.DrainTimeout.String(), "lease", r.opts.Lease.String())
	}
	dctx, cancel := context.WithTimeout(ctx, r.opts.DrainTimeout)
	defer cancel()
	if err := r.drain(dctx); err != nil {
		r.log.Error("outbox relay drain incomplete", "error", err, "latency_ms", time.Since(start).Milliseconds())
	} else {
		r.log.Info("outbox relay drained", "latency_ms", time.Since(start).Milliseconds())
	}
	r.publisherOnce.Do(r.stopPublisher) // drain returned after run did
	return nil
}
