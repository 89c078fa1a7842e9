package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"

	"github.com/eventrelay/eventrelay/internal/postgres"
	"github.com/eventrelay/eventrelay/internal/postgres/inboxdb"
	"github.com/eventrelay/eventrelay/projector/internal/retention"
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
	metrics *metrics

	mu        sync.Mutex
	started   bool
	stopped   bool
	engines   map[string]*engine // by projection name
	subs      map[string]bool
	receivers []*receiver
	deadLet   []*topicDeadLetterer
	retention []*retention.Inbox
	watches   []*attachmentWatch // each projection's subscription, read every SubscriptionCheckInterval
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
		return nil, err
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
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, fmt.Errorf("projector: registering metrics on Options.Registerer: %w", err)
	}
	return &Projector{pool: pool, client: client, opts: o, metrics: m,
		engines: map[string]*engine{}, subs: map[string]bool{}}, nil
}

// Register adds a projection. Call it before Start or Run; errors name the
// invalid field, and a refused projection changes nothing.
func (p *Projector) Register(pr Projection) error {
	if err := pr.check(); err != nil {
		return err
	}
	pr.Batching = pr.Batching.WithDefaults()
	if err := pr.Batching.Validate(); err != nil {
		return fmt.Errorf("projection %s: %w", pr.Name, err)
	}
	if pr.InboxRetention < 0 {
		return fmt.Errorf("projection %s: %w", pr.Name, invalid("Projection.InboxRetention", "must be >= 0 (0 keeps inbox rows forever), got %s", pr.InboxRetention))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.started || p.stopped:
		return fmt.Errorf("projector: projection %s: Register after Start", pr.Name)
	case p.engines[pr.Name] != nil:
		return fmt.Errorf("projector: Projection.Name %q registered twice", pr.Name)
	case p.subs[pr.Subscription]:
		return fmt.Errorf("projector: projection %s: Projection.Subscription %q is already received by another projection", pr.Name, pr.Subscription)
	}
	dl := newTopicDeadLetterer(p.client, pr.DeadLetterTopic)
	e, err := p.build(pr, dl)
	if err != nil {
		dl.Stop()
		return err
	}
	r := newReceiver(p.client, pr.Subscription, e, p.opts.Receive, p.opts.Health, p.opts.Logger)
	if !p.opts.StallAfterOff {
		r.DetectStalls(p.opts.StallAfter)
	}
	needs := postgres.Merge(postgres.ProjectorNeeds, postgres.ReadWrite(pr.Tables...))
	checkSchema := func(ctx context.Context) error { return postgres.CheckSchema(ctx, p.pool, needs) }
	r.RequireBeforeReceive(checkSchema)
	if p.opts.Health != nil {
		p.opts.Health.AddCheck("schema/"+pr.Name, checkSchema)
		p.opts.Health.AddCheck("blocked/"+pr.Name, e.blockedCheck)
	}
	p.engines[pr.Name], p.subs[pr.Subscription] = e, true
	p.receivers = append(p.receivers, r)
	p.deadLet = append(p.deadLet, dl)
	if !p.opts.SubscriptionCheckOff {
		p.watches = append(p.watches, newAttachmentWatch(p.client, pr.Name, pr.Subscription, p.opts.SubscriptionCheckInterval,
			p.metrics.detached.WithLabelValues(pr.Name, pr.Subscription), p.opts.Health, p.opts.Logger))
	}
	if pr.InboxRetention > 0 {
		p.retention = append(p.retention, newInboxRetention(p.pool, pr.Name, pr.Consumer, pr.InboxRetention, p.opts, p.metrics, p.opts.Logger))
	}
	return nil
}

// newInboxRetention returns the retention of consumer's inbox rows for
// projection name, keeping them for age; o (with its defaults applied)
// gives the interval and batch size.
func newInboxRetention(db inboxdb.DBTX, name, consumer string, age time.Duration, o Options, m *metrics, log *slog.Logger) *retention.Inbox {
	pm := m.forProjection(name)
	return &retention.Inbox{DB: db, Consumer: consumer, Age: age, Interval: o.InboxRetentionInterval, BatchSize: o.InboxRetentionBatchSize,
		Deleted: pm.inboxDeleted, Failed: pm.retentionFailed, Log: log.With("projection", name, "consumer", consumer)}
}

// build builds the projection's engine for its applier.
func (p *Projector) build(pr Projection, dl deadLetterer) (*engine, error) {
	o := engineOptions{
		Name: pr.Name, Consumer: pr.Consumer, Batch: pr.Batching, DeadLetter: dl, Classify: pr.Classify,
		Metrics: p.metrics, Logger: p.opts.Logger,
		Tracer: p.opts.TracerProvider.Tracer("github.com/eventrelay/eventrelay/projector"),
	}
	switch {
	case pr.Tx != nil:
		return txEngine(p.pool, pr.Tx, o)
	case pr.TxBatch != nil:
		return txBatchEngine(p.pool, pr.TxBatch, o)
	default:
		return batchEngine(p.pool, pr.Batch, o)
	}
}

// Start receives every registered projection's subscription until Stop is
// called, and then returns nil (transport.Server). Beside them it deletes
// the inbox rows past each Projection.InboxRetention. A failing subscription
// is retried with backoff without affecting the others (see
// ReceiveOptions.RetryMin); it does not make Start return. Start after
// Stop returns nil at once: a Kratos app stopped while it starts may stop
// its servers before it starts them.
func (p *Projector) Start(ctx context.Context) error {
	p.mu.Lock()
	switch {
	case p.stopped:
		p.mu.Unlock()
		return nil
	case p.started:
		p.mu.Unlock()
		return errors.New("projector: Start called twice")
	case len(p.receivers) == 0:
		p.mu.Unlock()
		return errors.New("projector: no projection registered")
	}
	p.started = true
	rs, rets, watches := p.receivers, p.retention, p.watches
	p.mu.Unlock()
	rctx, cancel := context.WithCancel(ctx)
	var maint sync.WaitGroup
	for _, r := range rets {
		maint.Go(func() { r.Run(rctx) })
	}
	for _, w := range watches {
		maint.Go(func() { w.run(rctx) })
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
// start. After Stop, Start returns at once without receiving. When ctx ends
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
