package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// receiver pulls one subscription with StreamingPull and feeds an engine.
// It is a Kratos transport.Server: Start blocks while receiving; Stop stops
// pulling, waits until every in-flight message is settled and closes the
// engine.
//
// When Receive fails (an error the client does not retry itself: a broken
// stream, a missing subscription), the receiver starts it again after a
// backoff instead of returning: one failing subscription must not stop the
// process and with it every other projection. While it fails, the
// readiness check "receive/<projection>" fails naming the reason,
// projector_receiving is 0 and projector_receive_errors_total counts it.
type receiver struct {
	sub *pubsub.Subscriber
	// subscription as given (an id or a full name), for the trace.
	subscription string
	// subName is the subscription's full name (for errors).
	subName string
	engine  *engine
	cfg     ReceiveOptions
	health  *health.Health
	log     *slog.Logger
	loop    string

	failure    atomic.Pointer[receiveFailure] // nil while receiving works
	require    func(context.Context) error    // see RequireBeforeReceive
	stallAfter time.Duration                  // see DetectStalls

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool

	// abandon is closed by Stop when its context ends first: Start then
	// returns without waiting for Receive (its final acks may never be
	// answered; unacked messages are delivered again).
	abandon     chan struct{}
	abandonOnce sync.Once
}

// receiveFailure is the last Receive error, until receiving works again.
type receiveFailure struct {
	reason errclass.Reason
	err    string
	since  time.Time
}

// stableAfter is how long a Receive must run without error to count as
// working again (when no message arrives sooner) and to reset the backoff.
const stableAfter = 5 * time.Second

// newReceiver returns a receiver of subscription (an id or a full name).
// Zero fields of cfg take their defaults. health may be nil; otherwise the receiver
// registers a loop "receiver/<projection>" that ticks while it runs and a
// readiness check "receive/<projection>" that fails while Receive fails.
func newReceiver(client *pubsub.Client, subscription string, e *engine, cfg ReceiveOptions, health *health.Health, log *slog.Logger) *receiver {
	cfg = cfg.WithDefaults()
	sub := client.Subscriber(subscription)
	sub.ReceiveSettings = pubsub.ReceiveSettings{
		MaxOutstandingMessages: cfg.MaxOutstandingMessages,
		MaxOutstandingBytes:    cfg.MaxOutstandingBytes,
		NumGoroutines:          cfg.NumGoroutines,
		MaxExtension:           cfg.MaxExtension,
		// The stream's ack deadline and each extension (see
		// ReceiveOptions.AckDeadline).
		MaxDurationPerAckExtension: cfg.AckDeadline,
	}
	if log == nil {
		log = slog.Default()
	}
	r := &receiver{
		sub: sub, subscription: subscription, subName: sub.String(), engine: e, cfg: cfg, health: health,
		log:     log.With("projection", e.Name(), "subscription", subscription),
		loop:    "receiver/" + e.Name(),
		done:    make(chan struct{}),
		abandon: make(chan struct{}),
	}
	if health != nil {
		health.RegisterLoop(r.loop, 30*time.Second)
		health.AddCheck("receive/"+e.Name(), r.check)
	}
	e.pm.receiving.Set(1)
	return r
}

// RequireBeforeReceive makes every Receive wait until check returns no
// schema_missing or permission_denied error (the Postgres tables a
// projection writes, missing or not granted: its messages would otherwise
// be dead-lettered): the check failing so counts as a receive failure,
// retried with the same backoff.
// Other check errors (Postgres down) do not hold receiving back: those
// messages are retried one by one. Call it before Start.
func (r *receiver) RequireBeforeReceive(check func(context.Context) error) { r.require = check }

// Start receives until Stop is called, starting Receive again with backoff
// whenever it fails. It returns nil once stopped.
func (r *receiver) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped || r.cancel != nil {
		r.mu.Unlock()
		return nil
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.mu.Unlock()
	defer close(r.done)
	defer func() {
		select {
		case <-r.abandon:
			go r.engine.Close() // its settles may wait on Pub/Sub: not for them
		default:
			r.engine.Close()
		}
	}()
	defer cancel()

	go r.tick(rctx)
	go r.watchStall(rctx)
	r.log.Info("receiving", "max_outstanding_messages", r.cfg.MaxOutstandingMessages,
		"max_outstanding_bytes", r.cfg.MaxOutstandingBytes, "num_goroutines", r.cfg.NumGoroutines,
		"exactly_once", r.cfg.ExactlyOnce)
	backoff := r.cfg.RetryMin
	for {
		began := time.Now()
		err := r.precondition(rctx)
		if err == nil {
			err = r.receive(rctx)
		}
		if rctx.Err() != nil || errors.Is(err, errAbandoned) {
			break
		}
		if time.Since(began) >= stableAfter {
			backoff = r.cfg.RetryMin
		}
		r.failed(err, backoff)
		select {
		case <-rctx.Done():
		case <-time.After(backoff):
		}
		if rctx.Err() != nil {
			break
		}
		backoff = min(2*backoff, r.cfg.RetryMax)
	}
	r.log.Info("receiver stopped; in-flight messages settled")
	return nil
}

func (r *receiver) precondition(ctx context.Context) error {
	if r.require == nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.require(cctx); errclass.Of(err) == errclass.SchemaMissing || errclass.Of(err) == errclass.PermissionDenied {
		return err
	}
	return nil
}

// receive runs one Receive. It clears the failure once a message arrives
// or the Receive has run for stableAfter.
func (r *receiver) receive(ctx context.Context) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if r.failure.Load() != nil {
		go func() {
			select {
			case <-actx.Done():
			case <-time.After(stableAfter):
				r.recovered()
			}
		}()
	}
	received := make(chan error, 1)
	go func() {
		received <- r.sub.Receive(actx, func(ctx context.Context, m *pubsub.Message) {
			if r.failure.Load() != nil {
				r.recovered()
			}
			if r.replayForOther(m) {
				m.Ack()
				return
			}
			r.engine.Process(ctx, r.message(m))
		})
	}()
	var err error
	select {
	case err = <-received:
	case <-r.abandon:
		return errAbandoned
	}
	if err == nil || errors.Is(err, context.Canceled) && ctx.Err() == nil {
		err = errors.New("receive returned without an error while not stopped")
	}
	return gpubsub.Target{Subscription: r.sub.String()}.Classify(err)
}

// replayForOther reports a message a dead-letter replay republished for
// another subscription (contract.AttrReplayFor): it is acked unapplied and
// counted in projector_replay_skipped_total.
func (r *receiver) replayForOther(m *pubsub.Message) bool {
	target := m.Attributes[contract.AttrReplayFor]
	if target == "" || target == r.subscriptionID() {
		return false
	}
	r.engine.pm.replaySkipped.Inc()
	return true
}

// subscriptionID is the subscription's ID (the last element of a full
// name).
func (r *receiver) subscriptionID() string {
	return r.subscription[strings.LastIndexByte(r.subscription, '/')+1:]
}

// errAbandoned: Stop gave up waiting for Receive to return.
var errAbandoned = errors.New("receive abandoned at shutdown")

// failed records a Receive failure that is retried after backoff.
func (r *receiver) failed(err error, backoff time.Duration) {
	reason := errclass.Of(err)
	prev := r.failure.Load()
	since := time.Now()
	if prev != nil {
		since = prev.since
	}
	r.failure.Store(&receiveFailure{reason: reason, err: err.Error(), since: since})
	r.engine.pm.receiving.Set(0)
	r.engine.pm.receiveFailed(string(reason))
	r.log.Error("receiving failed; retrying (the other projections are not affected)",
		"error", err.Error(), "error_reason", reason, "retry_in", backoff.String(),
		"failing_for", time.Since(since).Truncate(time.Millisecond).String())
}

// recovered clears the failure once receiving works again.
func (r *receiver) recovered() {
	if f := r.failure.Swap(nil); f != nil {
		r.engine.pm.receiving.Set(1)
		r.log.Info("receiving again", "failed_for", time.Since(f.since).Truncate(time.Millisecond).String())
	}
}

// check is the readiness check: an error while Receive fails.
func (r *receiver) check(context.Context) error {
	if f := r.failure.Load(); f != nil {
		return fmt.Errorf("receiving %s fails since %s (%s), retrying: %s",
			r.sub, f.since.UTC().Format(time.RFC3339), f.reason, f.err)
	}
	return nil
}

// Stop stops pulling and waits (bounded by ctx) until every in-flight
// message is acked or nacked. When ctx ends first (Pub/Sub does not
// answer the final acks, or a handler is slow) it abandons the rest and
// returns nil: nothing is lost, since every message not acked is
// delivered again and its repeated effects are absorbed by the inbox.
func (r *receiver) Stop(ctx context.Context) error {
	r.mu.Lock()
	r.stopped = true
	cancel := r.cancel
	r.mu.Unlock()
	r.engine.Stopping()
	if cancel == nil {
		r.engine.Close()
		return nil
	}
	cancel()
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		r.abandonOnce.Do(func() { close(r.abandon) })
		r.log.Warn("shutdown timeout: abandoning what is still in flight (final acks, settles); unacked messages are delivered again",
			"inflight", r.engine.Inflight(), "error", ctx.Err().Error())
		return nil
	}
}

func (r *receiver) tick(ctx context.Context) {
	if r.health == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		r.health.Tick(r.loop)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// received is a message and its acker in one allocation.
type received struct {
	message
	acker pubsubAcker
}

func (r *receiver) message(m *pubsub.Message) *message {
	out := &received{
		message: message{
			ID: m.ID, Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey,
			Subscription: r.subscription, PublishTime: m.PublishTime,
		},
		acker: pubsubAcker{m: m, sub: r.subName, exactlyOnce: r.cfg.ExactlyOnce},
	}
	out.Acker = &out.acker
	if m.DeliveryAttempt != nil {
		out.DeliveryAttempt = *m.DeliveryAttempt
	}
	return &out.message
}

type pubsubAcker struct {
	m           *pubsub.Message
	sub         string
	exactlyOnce bool
}

func (a pubsubAcker) Ack(ctx context.Context) error {
	if !a.exactlyOnce {
		a.m.Ack()
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	if _, err := a.m.AckWithResult().Get(ctx); err != nil {
		return gpubsub.Target{Subscription: a.sub}.Classify(err)
	}
	return nil
}

func (a pubsubAcker) Nack() { a.m.Nack() }

func (a pubsubAcker) Confirms() bool { return a.exactlyOnce }
