package projector_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/projector"
)

// freeze makes the Pub/Sub server stop answering the calls it reacts to
// (they block) while on; release answers them all.
type freeze struct {
	mu       sync.Mutex
	on       bool
	released chan struct{}
	once     sync.Once
}

func (f *freeze) React(any) (bool, any, error) {
	f.mu.Lock()
	on := f.on
	f.mu.Unlock()
	if on {
		<-f.released
	}
	return false, nil, nil
}

func (f *freeze) set(on bool) {
	f.mu.Lock()
	f.on = on
	f.mu.Unlock()
}

func (f *freeze) release() { f.once.Do(func() { close(f.released) }) }

// TestShutdownIsBoundedWhenPubSubStopsAnswering: with Pub/Sub answering no
// acknowledgement, Run returns within its DrainTimeout (the final ack
// flush is abandoned: unacked messages come back) and, nothing being lost,
// returns nil.
func TestShutdownIsBoundedWhenPubSubStopsAnswering(t *testing.T) {
	t.Parallel()
	f := &freeze{released: make(chan struct{})}
	db, ps := newCounterStack(t,
		pstest.ServerReactorOption{FuncName: "Acknowledge", Reactor: f},
		pstest.ServerReactorOption{FuncName: "ModifyAckDeadline", Reactor: f})
	t.Cleanup(f.release) // before the server stops
	const drain = 2 * time.Second
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: prometheus.NewRegistry(), Health: health.NewHealth(0),
		DrainTimeout: drain, Receive: projector.ReceiveOptions{RetryMin: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	register(t, p, pgProjection(t, counterRows(&calls{n: map[uuid.UUID]int{}}), projector.BatchOptions{Linger: time.Millisecond}))
	ctx, stop := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()

	f.set(true) // from now on no ack is answered
	for v := int64(1); v <= 3; v++ {
		publish(t, ps, "counters", setEvent(t, "c1", v, 10*v))
	}
	eventually(t, "c1 at v3 applied", func() bool {
		var version int64
		err := db.Pool.QueryRow(t.Context(), `SELECT version FROM order_totals WHERE order_id = 'c1'`).Scan(&version)
		return err == nil && version == 3
	})
	time.Sleep(200 * time.Millisecond) // the acks are sent, and hang

	began := time.Now()
	stop()
	select {
	case err := <-ran:
		if took := time.Since(began); took > drain+time.Second {
			t.Errorf("Run returned %s after its context ended, want within DrainTimeout %s", took, drain)
		}
		if err != nil {
			t.Errorf("Run = %v, want nil: nothing was lost (unacked messages come back)", err)
		}
	case <-time.After(drain + 10*time.Second):
		f.release()
		err := <-ran
		t.Fatalf("Run still running %s after its context ended (DrainTimeout %s) while Pub/Sub did not answer; after the answers came it returned %v",
			time.Since(began).Round(time.Second), drain, err)
	}
}

// TestStartAfterStopReturnsNil: a Kratos app stopped while it starts may
// call Stop before Start; Start then returns nil at once, receiving
// nothing, so the app stops cleanly instead of failing.
func TestStartAfterStopReturnsNil(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	register(t, p, pgProjection(t, counterRows(&calls{n: map[uuid.UUID]int{}}), projector.BatchOptions{}))
	if err := p.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- p.Start(t.Context()) }()
	select {
	case err := <-started:
		if err != nil {
			t.Errorf("Start after Stop = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start after Stop still running after 10s")
	}
}
