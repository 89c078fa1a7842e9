package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/projection"
)

// engineOptions configure an engine.
type engineOptions struct {
	// Name is the projection's name: the metrics label, the dead letter's
	// "projection" attribute and, unless Consumer is set, the inbox
	// consumer name. Required.
	Name string
	// Consumer is the inbox consumer name (default Name). Two projections
	// of the same events must use different consumers.
	Consumer string
	// Batch shapes batching and retry backoff; zero values take defaults.
	Batch BatchOptions
	// DeadLetter receives deterministic failures. Required: a message that
	// can never be applied is acked only after it was dead-lettered.
	DeadLetter deadLetterer
	// Classify decides permanent vs transient (default projection.Classify).
	Classify func(error) (projection.Reason, bool)
	// Metrics is required.
	Metrics *metrics
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Tracer records a consumer span "process <Name>" per message, child
	// of the producer's trace context carried in the traceparent
	// attribute, and under it an "apply <Name>" span for the applier's work
	// on the message's batch (default: the global provider's tracer).
	Tracer trace.Tracer
}

func (o *engineOptions) validate() error {
	if o.Name == "" {
		return errors.New("projector: engineOptions.Name is required")
	}
	if o.Consumer == "" {
		o.Consumer = o.Name
	}
	if o.DeadLetter == nil {
		return fmt.Errorf("projector %s: engineOptions.DeadLetter is required", o.Name)
	}
	if o.Metrics == nil {
		return fmt.Errorf("projector %s: engineOptions.Metrics is required", o.Name)
	}
	if o.Classify == nil {
		o.Classify = projection.Classify
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Tracer == nil {
		o.Tracer = otel.Tracer("github.com/eventrelay/eventrelay/projector")
	}
	o.Batch = o.Batch.WithDefaults()
	return nil
}

// applier applies a batch: it sets result or err on every item.
type applier interface {
	apply(ctx context.Context, items []*item)
}

// resolver completes an event through the projection's registry and
// returns the HandlerID of its route (see projection.Route).
type resolver func(*projection.Event) (int, error)

// engine turns messages into read model changes for one projection. Feed
// it with Process from any number of goroutines; call Close once no
// Process call is running any more.
type engine struct {
	opts    engineOptions
	resolve resolver
	applier applier
	pm      *projectionMetrics
	log     *slog.Logger
	tr      tracing

	inflight atomic.Int64 // Process calls not yet returned
	progress atomic.Int64 // unix nanoseconds of the last ack, or of the start of a busy period (see stalledFor)

	// send guards closed against sends on batches: senders hold it for
	// reading, Close for writing.
	send   sync.RWMutex
	closed bool
	// mu guards the batch being filled: filling, and linger, the timer
	// that flushes it Batch.Linger after its first item.
	mu       sync.Mutex
	filling  *batch
	linger   *time.Timer
	batches  chan *batch
	workers  sync.WaitGroup
	stopping chan struct{}
	stopOnce sync.Once

	failStreak atomic.Int64 // consecutive batches that failed transiently
	block      blocker      // see blocked.go
}

// resolveWith is the resolver of reg.
func resolveWith[H any](reg *projection.Registry[H]) resolver {
	return func(ev *projection.Event) (int, error) {
		rt, err := reg.Resolve(ev)
		return rt.HandlerID, err
	}
}

func newEngine(o engineOptions, resolve resolver, a applier) *engine {
	e := &engine{
		opts:     o,
		resolve:  resolve,
		applier:  a,
		pm:       o.Metrics.forProjection(o.Name),
		log:      o.Logger.With("projection", o.Name),
		tr:       newTracing(o.Tracer, o.Name),
		batches:  make(chan *batch),
		stopping: make(chan struct{}),
	}
	e.linger = time.AfterFunc(time.Hour, e.flushLingering)
	e.linger.Stop()
	for range o.Batch.Workers {
		e.workers.Add(1)
		go e.worker()
	}
	return e
}

// Name is the projection's name.
func (e *engine) Name() string { return e.opts.Name }

// Inflight is the number of Process calls not yet returned.
func (e *engine) Inflight() int64 { return e.inflight.Load() }

// Process handles one delivery and returns once it is acked or nacked. ctx
// is the delivery's context; its cancellation (shutdown) does not abort the
// work: an in-flight message is always finished and settled.
func (e *engine) Process(ctx context.Context, m *message) {
	e.pm.inflight.Inc()
	defer e.pm.inflight.Dec()
	if e.inflight.Add(1) == 1 {
		e.progress.Store(time.Now().UnixNano()) // busy again after idling: not a stall yet
	}
	defer e.inflight.Add(-1)
	it := &item{msg: m, ctx: context.WithoutCancel(ctx), received: time.Now()}
	it.delivery = it.ctx
	for {
		done, ok := e.enqueue(it)
		if !ok {
			break
		}
		<-done // the worker applied the item, and settled it when settlesOnWorker
		if it.settlesOnWorker() {
			return
		}
		if !e.holdBlocked(it) { // a blocked projection applies it again
			e.finish(it)
			return
		}
	}
	e.begin(it)
	if it.err == nil { // a message that does not parse is dead-lettered still
		it.err = projection.Retry(errors.New("projector is shutting down"))
	}
	e.finish(it)
}

// begin starts the item's process span, dated from its delivery, and
// parses its attributes (a failure is the item's error). The worker does
// it for the batch, on its own goroutine: the trace context extraction
// and the parsing grew (and copied) the stack of each delivery's
// goroutine.
func (e *engine) begin(it *item) {
	it.ctx, it.span = e.tr.startProcess(it.ctx, it.msg, it.received)
	it.err = it.parse()
}

// finish settles the item and ends its process span.
func (e *engine) finish(it *item) {
	e.settle(it.ctx, it)
	it.span.End()
}

// batch is items applied together; done is closed once each of them has
// its result or error.
type batch struct {
	items []*item
	done  chan struct{}
}

// enqueue adds it to the batch being filled and hands the batch to a
// worker once it holds Batch.Size items (waiting while every worker is
// busy). It returns the batch's done channel, or false once the engine is
// closed.
func (e *engine) enqueue(it *item) (<-chan struct{}, bool) {
	e.send.RLock()
	defer e.send.RUnlock()
	if e.closed {
		return nil, false
	}
	e.mu.Lock()
	b := e.filling
	if b == nil {
		b = &batch{items: make([]*item, 0, e.opts.Batch.Size), done: make(chan struct{})}
		e.filling = b
		e.linger.Reset(e.opts.Batch.Linger)
	}
	b.items = append(b.items, it)
	full := len(b.items) >= e.opts.Batch.Size
	if full {
		e.filling = nil
		e.linger.Stop()
	}
	e.mu.Unlock()
	if full {
		e.batches <- b
	}
	return b.done, true
}

// flushLingering hands the batch being filled to a worker: its first item
// waited Batch.Linger (or a little less, when the timer of a batch flushed
// full fires for its successor).
func (e *engine) flushLingering() {
	e.send.RLock()
	defer e.send.RUnlock()
	if !e.closed {
		e.flush()
	}
}

// flush hands the batch being filled, if any, to a worker. The caller
// holds send.
func (e *engine) flush() {
	e.mu.Lock()
	b := e.filling
	e.filling = nil
	e.mu.Unlock()
	if b != nil {
		e.batches <- b
	}
}

// Stopping cuts retry backoffs short: messages held after a transient
// failure are nacked at once. Call it when shutdown begins.
func (e *engine) Stopping() {
	e.stopOnce.Do(func() { close(e.stopping) })
}

// Close stops the workers after flushing the batch being filled. Call
// it once no Process call is running; later Process calls nack.
func (e *engine) Close() {
	e.Stopping()
	e.send.Lock()
	if !e.closed {
		e.closed = true
		e.linger.Stop()
		e.flush()
		close(e.batches)
	}
	e.send.Unlock()
	e.workers.Wait()
}

// worker resolves and applies batches. Decoding runs here, on a
// long-lived goroutine, batch by batch, not on the client library's
// goroutine of each message, whose stack a decoder would grow again for
// every message.
func (e *engine) worker() {
	defer e.workers.Done()
	for b := range e.batches {
		for _, it := range b.items {
			e.begin(it)
		}
		if ok := e.resolveAll(b.items); len(ok) > 0 {
			e.applyBatch(ok)
		}
		e.settleSucceeded(b.items)
		close(b.done)
	}
}

// settleSucceeded settles the batch's items that succeeded, on the
// worker: an ack on each delivery's goroutine grew (and copied) its
// stack. An ack that waits for the service's confirmation (exactly-once)
// and every failure (a held nack, a dead letter) stay on the delivery's
// goroutine, so that none of them holds the worker.
func (e *engine) settleSucceeded(items []*item) {
	for _, it := range items {
		if it.settlesOnWorker() {
			e.finish(it)
		}
	}
}

// resolveAll completes the events of b through the projection's registry
// and returns the items that resolved (b itself when all did); the others
// keep their error and are settled without being applied.
func (e *engine) resolveAll(b []*item) []*item {
	var ok []*item // nil while every item so far resolved
	for i, it := range b {
		err := it.err // the attributes did not parse
		if err == nil {
			it.handlerID, err = e.resolve(&it.ev)
		}
		switch {
		case err != nil:
			it.err = err
			if ok == nil {
				ok = append(make([]*item, 0, len(b)), b[:i]...)
			}
		case ok != nil:
			ok = append(ok, it)
		}
	}
	if ok == nil {
		return b
	}
	return ok
}

// applyBatch applies resolved items and sets the backoff of those that
// failed transiently.
func (e *engine) applyBatch(b []*item) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Batch.Timeout)
	e.tr.startApply(b)
	e.applier.apply(ctx, b)
	cancel()
	endApply(b, e.opts.Classify)
	e.noteBlocks(b)
	e.pm.batchSize.Observe(float64(len(b)))
	backoff := e.backoffAfter(b)
	for _, it := range b {
		if it.err != nil {
			it.backoff = int64(backoff)
		}
	}
}

// backoffAfter updates the failure streak from a finished batch and
// returns how long its transiently failed messages are held before the
// nack: nothing while the applier works, then Batch.RetryBackoffMin doubling
// per failed batch up to Batch.RetryBackoffMax.
func (e *engine) backoffAfter(b []*item) time.Duration {
	failed := 0
	for _, it := range b {
		if it.err != nil {
			if _, permanent := e.opts.Classify(it.err); !permanent {
				failed++
			}
		}
	}
	if failed == 0 {
		e.failStreak.Store(0)
		return 0
	}
	if failed < len(b) {
		return e.opts.Batch.RetryBackoffMin
	}
	n := e.failStreak.Add(1)
	d, max := e.opts.Batch.RetryBackoffMin, e.opts.Batch.RetryBackoffMax
	for i := int64(1); i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
