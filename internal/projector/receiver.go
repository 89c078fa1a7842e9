package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/ops"
)

// Receiver pulls one subscription with StreamingPull and feeds an Engine.
// It is a Kratos transport.Server: Start blocks while receiving; Stop stops
// pulling, waits until every in-flight message is settled and closes the
// engine.
type Receiver struct {
	sub    *pubsub.Subscriber
	engine *Engine
	cfg    ReceiveConfig
	health *ops.Health
	log    *slog.Logger
	loop   string

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// NewReceiver returns a Receiver of subscription (an id or a full name).
// cfg must have been validated. health may be nil; otherwise the receiver
// registers a loop "receiver/<projection>" that ticks while it runs.
func NewReceiver(client *pubsub.Client, subscription string, e *Engine, cfg ReceiveConfig, health *ops.Health, log *slog.Logger) *Receiver {
	sub := client.Subscriber(subscription)
	sub.ReceiveSettings = pubsub.ReceiveSettings{
		MaxOutstandingMessages: cfg.MaxOutstandingMessages,
		MaxOutstandingBytes:    cfg.MaxOutstandingBytes,
		NumGoroutines:          cfg.NumGoroutines,
		MaxExtension:           cfg.MaxExtension.D(),
		// The stream's ack deadline and each extension (see
		// ReceiveConfig.AckDeadline).
		MaxDurationPerAckExtension: cfg.AckDeadline.D(),
	}
	if log == nil {
		log = slog.Default()
	}
	r := &Receiver{
		sub: sub, engine: e, cfg: cfg, health: health,
		log:  log.With("projection", e.Name(), "subscription", subscription),
		loop: "receiver/" + e.Name(),
		done: make(chan struct{}),
	}
	if health != nil {
		health.RegisterLoop(r.loop, 30*time.Second)
	}
	return r
}

// Start receives until Stop is called or the service returns a
// non-retryable error (e.g. the subscription does not exist).
func (r *Receiver) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.stopped || r.cancel != nil {
		r.mu.Unlock()
		return nil
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.mu.Unlock()
	defer close(r.done)
	defer r.engine.Close()

	go r.tick(rctx)
	r.log.Info("receiving", "max_outstanding_messages", r.cfg.MaxOutstandingMessages,
		"num_goroutines", r.cfg.NumGoroutines, "exactly_once", r.cfg.ExactlyOnce)
	err := r.sub.Receive(rctx, func(ctx context.Context, m *pubsub.Message) {
		r.engine.Process(ctx, r.message(m))
	})
	cancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		r.log.Error("receiving stopped", "error", err.Error())
		return fmt.Errorf("receiving %s: %w", r.sub, gpubsub.Classify(err))
	}
	r.log.Info("receiver stopped; in-flight messages settled")
	return nil
}

// Stop stops pulling and waits (bounded by ctx) until every in-flight
// message is acked or nacked.
func (r *Receiver) Stop(ctx context.Context) error {
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
		return fmt.Errorf("stopping receiver %s: %w", r.sub, ctx.Err())
	}
}

func (r *Receiver) tick(ctx context.Context) {
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

func (r *Receiver) message(m *pubsub.Message) *Message {
	out := &Message{
		ID: m.ID, Data: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey,
		PublishTime: m.PublishTime, Acker: pubsubAcker{m: m, exactlyOnce: r.cfg.ExactlyOnce},
	}
	if m.DeliveryAttempt != nil {
		out.DeliveryAttempt = *m.DeliveryAttempt
	}
	return out
}

type pubsubAcker struct {
	m           *pubsub.Message
	exactlyOnce bool
}

func (a pubsubAcker) Ack(ctx context.Context) error {
	if !a.exactlyOnce {
		a.m.Ack()
		return nil
	}
	if _, err := a.m.AckWithResult().Get(ctx); err != nil {
		return gpubsub.Classify(err)
	}
	return nil
}

func (a pubsubAcker) Nack() { a.m.Nack() }
