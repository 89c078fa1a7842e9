package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"

	"github.com/eventrelay/eventrelay/internal/postgres"
	engine "github.com/eventrelay/eventrelay/internal/projector"
)

// ProviderSet provides a *Projector from a *pgxpool.Pool, a
// *pubsub.Client and Options; register the projections on it before the
// Kratos app starts it.
var ProviderSet = wire.NewSet(New)

// Projector receives the subscriptions of its registered projections and
// applies their events. It is a Kratos transport.Server (Start, Stop);
// Run is the same without Kratos.
type Projector struct {
	pool    *pgxpool.Pool
	client  *pubsub.Client
	opts    Options
	receive engine.ReceiveConfig
	metrics *engine.Metrics

	mu        sync.Mutex
	started   bool
	stopped   bool
	names     map[string]bool
	subs      map[string]bool
	receivers []*engine.Receiver
	deadLet   []*engine.TopicDeadLetterer
	retention []*engine.InboxRetention
}

// New checks o and returns a Projector with no projection. It contacts
// neither Postgres nor Pub/Sub. Errors name the invalid field.
func New(pool *pgxpool.Pool, client *pubsub.Client, o Options) (*Projector, error) {
	switch {
	case pool == nil:
		return nil, errors.New("projector: New needs a *pgxpool.Pool, got nil")
	case client == nil:
		return nil, errors.New("projector: New needs a *pubsub.Client, got nil")
	}
	if ps := postgres.PoolSchema(pool); o.Schema == "" {
		o.Schema = ps
		if o.Schema == "" {
			return nil, errors.New(`projector: no schema: the pool sets no search_path and Options.Schema is empty. Open the pool with the schema that holds inbox_events first in its search_path (pgxpool.Config.ConnConfig.RuntimeParams["search_path"], or search_path in the connection string): the projector names its tables unqualified`)
		}
	} else if ps != o.Schema {
		return nil, fmt.Errorf("projector: Options.Schema %q is not the first schema of the pool's search_path %q: open the pool with search_path = %s (pgxpool.Config.ConnConfig.RuntimeParams), or leave Options.Schema empty to use the pool's", o.Schema, ps, o.Schema)
	}
	o = o.WithDefaults()
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("projector: %w", err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	m, err := engine.NewMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("projector: registering metrics on Options.Registerer: %w", err)
	}
	return &Projector{pool: pool, client: client, opts: o, receive: engine.ReceiveConfig(o.Receive), metrics: m,
		names: map[string]bool{}, subs: map[string]bool{}}, nil
}

// Register adds a projection. Call it before Start or Run; errors name the
// invalid field, and a refused projection changes nothing.
func (p *Projector) Register(pr Projection) error {
	if err := pr.check(); err != nil {
		return err
	}
	pr.Batching = pr.Batching.WithDefaults()
	if err := pr.Batching.Validate(); err != nil {
		return fmt.Errorf("projector: projection %s: %w", pr.Name, err)
	}
	if pr.InboxRetention < 0 {
		return fmt.Errorf("projector: projection %s: %w", pr.Name, invalid("Projection.InboxRetention", "must be >= 0 (0 keeps inbox rows forever), got %s", pr.InboxRetention))
	}
	rc := p.opts.retention(pr.InboxRetention)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.started || p.stopped:
		return fmt.Errorf("projector: projection %s: Register after Start", pr.Name)
	case p.names[pr.Name]:
		return fmt.Errorf("projector: Projection.Name %q registered twice", pr.Name)
	case p.subs[pr.Subscription]:
		return fmt.Errorf("projector: projection %s: Projection.Subscription %q is already received by another projection", pr.Name, pr.Subscription)
	}
	dl := engine.NewTopicDeadLetterer(p.client, pr.DeadLetterTopic)
	e, err := p.engine(pr, engine.BatchConfig(pr.Batching), dl)
	if err != nil {
		dl.Stop()
		return err
	}
	r := engine.NewReceiver(p.client, pr.Subscription, e, p.receive, p.opts.Health, p.opts.Logger)
	r.DetectStalls(max(p.opts.StallAfter, 0))
	tables := append([]string{"inbox_events"}, pr.Tables...)
	r.RequireBeforeReceive(func(ctx context.Context) error {
		return postgres.CheckSchema(ctx, p.pool, tables)
	})
	p.names[pr.Name], p.subs[pr.Subscription] = true, true
	p.receivers = append(p.receivers, r)
	p.deadLet = append(p.deadLet, dl)
	if pr.InboxRetention > 0 {
		p.retention = append(p.retention, engine.NewInboxRetention(p.pool, pr.Name, pr.Consumer, rc, p.metrics, p.opts.Logger))
	}
	return nil
}

// engine builds the projection's engine for its applier.
func (p *Projector) engine(pr Projection, bc engine.BatchConfig, dl engine.DeadLetterer) (*engine.Engine, error) {
	o := engine.Options{
		Name: pr.Name, Consumer: pr.Consumer, Batch: bc, DeadLetter: dl, Classify: pr.Classify,
		Metrics: p.metrics, Logger: p.opts.Logger,
		Tracer: p.opts.TracerProvider.Tracer("github.com/eventrelay/eventrelay/projector"),
	}
	switch {
	case pr.Tx != nil:
		return engine.NewTxEngine(p.pool, pr.Tx, o)
	case pr.TxBatch != nil:
		return engine.NewTxBatchEngine(p.pool, pr.TxBatch, o)
	default:
		return engine.NewBatchEngine(p.pool, pr.Batch, o)
	}
}

// Start receives every registered projection's subscription until Stop is
// called, and then returns nil (transport.Server). Beside them it deletes
// the inbox rows past each Projection.InboxRetention. A failing subscription
// is retried with backoff without affecting the others (see
// ReceiveOptions.RetryMin); it does not make Start return.
func (p *Projector) Start(ctx context.Context) error {
	p.mu.Lock()
	switch {
	case p.stopped:
		p.mu.Unlock()
		return errors.New("projector: Start after Stop")
	case p.started:
		p.mu.Unlock()
		return errors.New("projector: Start called twice")
	case len(p.receivers) == 0:
		p.mu.Unlock()
		return errors.New("projector: no projection registered")
	}
	p.started = true
	rs, rets := p.receivers, p.retention
	p.mu.Unlock()
	rctx, cancel := context.WithCancel(ctx)
	var maint sync.WaitGroup
	for _, r := range rets {
		maint.Go(func() { r.Run(rctx) })
	}
	defer maint.Wait()
	defer cancel()
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.Start(ctx) // returns nil once stopped
		}()
	}
	wg.Wait()
	return nil
}

// Stop stops receiving, waits (bounded by ctx) until every in-flight
// message is acked or nacked, then flushes the dead-letter publishers
// (transport.Server). Options.Health, if set, reports draining from the
// start. After Stop the Projector cannot start again. When ctx ends
// first, whatever Pub/Sub does, Stop abandons the rest (final acks,
// flushes) and returns nil: a message whose ack was not answered is
// delivered again and absorbed by the inbox, so nothing is lost; Start
// returns at once too.
func (p *Projector) Stop(ctx context.Context) error {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return nil
	}
	p.stopped = true
	rs, dls := p.receivers, p.deadLet
	p.mu.Unlock()
	if p.opts.Health != nil {
		p.opts.Health.SetDraining()
	}
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Stop(ctx)
		}()
	}
	wg.Wait()
	// The dead-letter publishers flush within what is left of ctx: a
	// dead letter not confirmed was not acked either, so it comes back.
	flushed := make(chan struct{})
	go func() {
		for _, dl := range dls {
			dl.Stop()
		}
		close(flushed)
	}()
	select {
	case <-flushed:
	case <-ctx.Done():
	}
	return errors.Join(errs...)
}

// Run is Start until ctx is done, then Stop within Options.DrainTimeout.
// It returns nil after a clean drain.
func (p *Projector) Run(ctx context.Context) error {
	started := make(chan error, 1)
	go func() { started <- p.Start(ctx) }()
	select {
	case err := <-started:
		return err // refused to start
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.DrainTimeout)
	defer cancel()
	err := p.Stop(sctx)
	<-started
	return err
}
