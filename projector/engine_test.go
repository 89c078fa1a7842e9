package projector

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/telemetry/telemetrytest"
	"github.com/eventrelay/eventrelay/internal/testdb"
	"github.com/eventrelay/eventrelay/migrations"
	"github.com/eventrelay/eventrelay/projection"
)

// acker records how a message was settled.
type testAcker struct {
	mu     sync.Mutex
	acks   int
	nacks  int
	settle chan struct{}
	// confirm, when set, makes the acker confirming (as exactly-once
	// delivery is): Ack waits until confirm is closed.
	confirm chan struct{}
}

func newAcker() *testAcker { return &testAcker{settle: make(chan struct{}, 10)} }

func (a *testAcker) Ack(context.Context) error {
	if a.confirm != nil {
		<-a.confirm
	}
	a.mu.Lock()
	a.acks++
	a.mu.Unlock()
	a.settle <- struct{}{}
	return nil
}

func (a *testAcker) Confirms() bool { return a.confirm != nil }

func (a *testAcker) Nack() {
	a.mu.Lock()
	a.nacks++
	a.mu.Unlock()
	a.settle <- struct{}{}
}

func (a *testAcker) counts() (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.acks, a.nacks
}

// poisoned fails the events of chosen aggregates with chosen errors and
// applies the others through the test read model (item_view).
type poisoned struct {
	view items
	fail map[string]error
}

func (p *poisoned) HandleTx(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
	if err := p.fail[ev.AggregateID]; err != nil {
		return 0, err
	}
	return p.view.HandleTx(ctx, tx, ev)
}

type fixture struct {
	db  *testdb.DB
	ps  *gpubsubtest.Server
	reg *prometheus.Registry
}

func newTestEngine(t *testing.T, h projection.TxHandler, dlqTopic string, size int, mods ...func(*engineOptions)) (*engine, *fixture) {
	t.Helper()
	f := &fixture{db: testdb.New(t, testdb.Options{Schema: "items", Migrations: []migrations.Set{migrations.Eventrelay}}), ps: gpubsubtest.New(t), reg: prometheus.NewRegistry()}
	if _, err := f.db.Pool.Exec(t.Context(), itemView); err != nil {
		t.Fatal(err)
	}
	f.ps.Topic(t, "dlq")
	f.ps.Subscription(t, "dlq-read", "dlq", gpubsubtest.SubscriptionOptions{})
	m, err := newMetrics(f.reg)
	if err != nil {
		t.Fatal(err)
	}
	reg := projection.NewRegistry[projection.TxHandler]()
	registerItems(t, reg, h)
	dl := newTopicDeadLetterer(f.ps.Client, dlqTopic)
	t.Cleanup(dl.Stop)
	o := engineOptions{
		Name: "items", DeadLetter: dl, Metrics: m,
		Batch: BatchOptions{Size: size, Linger: time.Second, RetryBackoffMin: time.Millisecond},
	}
	for _, mod := range mods {
		mod(&o)
	}
	e, err := txEngine(f.db.Pool, reg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, f
}

// processAll feeds msgs concurrently (so they share one batch) and waits
// until all are settled.
func processAll(e *engine, msgs []msg, ackers []*testAcker) {
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Process(context.Background(), &message{ID: "m" + m.EventID.String()[:8], Data: m.Data, Attributes: m.Attributes, Acker: ackers[i]})
		}()
	}
	wg.Wait()
}

func TestBatchIsolatesFailingMessages(t *testing.T) {
	t.Parallel()
	bad, flaky := uuid.New(), uuid.New()
	h := &poisoned{view: items{}, fail: map[string]error{
		bad.String():   projection.Permanent(projection.MappingError, errors.New("cannot map")),
		flaky.String(): errclass.New(errclass.Unavailable, errors.New("downstream flaked")),
	}}
	e, f := newTestEngine(t, h, "dlq", 6)

	var msgs []msg
	var good []uuid.UUID
	for range 4 {
		id := uuid.New()
		good = append(good, id)
		msgs = append(msgs, itemEvent(t, id, 1, false))
	}
	msgs = append(msgs, itemEvent(t, bad, 1, false), itemEvent(t, flaky, 1, false))
	ackers := make([]*testAcker, len(msgs))
	for i := range ackers {
		ackers[i] = newAcker()
	}
	processAll(e, msgs, ackers) // 6 messages = one full batch

	for i := range 4 {
		if a, n := ackers[i].counts(); a != 1 || n != 0 {
			t.Errorf("good message %d: acks=%d nacks=%d, want acked", i, a, n)
		}
		var v int64
		if err := f.db.Pool.QueryRow(context.Background(), "SELECT version FROM item_view WHERE item_id = $1", good[i].String()).Scan(&v); err != nil || v != 1 {
			t.Errorf("good item %d not projected: v%d %v", i, v, err)
		}
	}
	if a, n := ackers[4].counts(); a != 1 || n != 0 {
		t.Errorf("permanently failing message: acks=%d nacks=%d, want acked after dead-lettering", a, n)
	}
	if a, n := ackers[5].counts(); a != 0 || n != 1 {
		t.Errorf("transiently failing message: acks=%d nacks=%d, want nacked", a, n)
	}
	var inbox int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM inbox_events").Scan(&inbox); err != nil || inbox != 4 {
		t.Errorf("inbox rows = %d (%v), want 4: failed messages must leave no inbox row", inbox, err)
	}
	if n := opstest.Metric(t, f.reg, "projector_failed_total", map[string]string{"reason": "unavailable"}); n != 1 {
		t.Errorf("failed_total{unavailable} = %v, want 1", n)
	}
	if n := opstest.Metric(t, f.reg, "projector_dead_lettered_total", map[string]string{"reason": "mapping_error"}); n != 1 {
		t.Errorf("dead_lettered_total{mapping_error} = %v, want 1", n)
	}
}

// An ack that waits for the service's confirmation (exactly-once) is
// made on its delivery's goroutine: with one worker, a batch whose acks
// are not confirmed yet does not hold the next batch back.
func TestConfirmingAckDoesNotHoldTheWorker(t *testing.T) {
	t.Parallel()
	e, f := newTestEngine(t, items{}, "dlq", 1, func(o *engineOptions) { o.Batch.Workers = 1 })
	held := newAcker()
	held.confirm = make(chan struct{})
	var confirmOnce sync.Once
	confirm := func() { confirmOnce.Do(func() { close(held.confirm) }) }
	t.Cleanup(confirm) // before the engine's Close, which waits for the worker
	first := make(chan struct{})
	go func() {
		defer close(first)
		m := itemEvent(t, uuid.New(), 1, false)
		e.Process(context.Background(), &message{ID: "held", Data: m.Data, Attributes: m.Attributes, Acker: held})
	}()
	for deadline := time.Now().Add(10 * time.Second); opstest.Metric(t, f.reg, "projector_applied_total", nil) < 1; { // the held message is applied; its ack waits
		if time.Now().After(deadline) {
			t.Fatal("the held message was not applied")
		}
		time.Sleep(time.Millisecond)
	}
	next := newAcker()
	m := itemEvent(t, uuid.New(), 1, false)
	processed := make(chan struct{})
	go func() {
		defer close(processed)
		e.Process(context.Background(), &message{ID: "next", Data: m.Data, Attributes: m.Attributes, Acker: next})
	}()
	select {
	case <-processed:
	case <-time.After(10 * time.Second):
		t.Fatal("the next batch waited for the first batch's unconfirmed ack")
	}
	if a, n := next.counts(); a != 1 || n != 0 {
		t.Errorf("next message: acks=%d nacks=%d, want acked", a, n)
	}
	if a, _ := held.counts(); a != 0 {
		t.Errorf("held message acked %d times before its confirmation", a)
	}
	confirm()
	<-first
	if a, n := held.counts(); a != 1 || n != 0 {
		t.Errorf("held message: acks=%d nacks=%d, want acked once confirmed", a, n)
	}
}

// A message whose attributes do not parse is batched like any other (the
// worker parses): it is dead-lettered with its reason and leaves no inbox
// row, and the messages batched with it are applied.
func TestBatchDeadLettersUnparsableAttributes(t *testing.T) {
	t.Parallel()
	e, f := newTestEngine(t, items{}, "dlq", 3)
	good := []uuid.UUID{uuid.New(), uuid.New()}
	broken := itemEvent(t, uuid.New(), 1, false)
	delete(broken.Attributes, "event_id")
	msgs := []msg{itemEvent(t, good[0], 1, false), broken, itemEvent(t, good[1], 1, false)}
	ackers := []*testAcker{newAcker(), newAcker(), newAcker()}
	processAll(e, msgs, ackers) // 3 messages = one full batch
	for i, a := range ackers {
		if acks, nacks := a.counts(); acks != 1 || nacks != 0 {
			t.Errorf("message %d: acks=%d nacks=%d, want acked (applied or dead-lettered)", i, acks, nacks)
		}
	}
	for i, id := range good {
		var v int64
		if err := f.db.Pool.QueryRow(context.Background(), "SELECT version FROM item_view WHERE item_id = $1", id.String()).Scan(&v); err != nil || v != 1 {
			t.Errorf("good item %d not projected: v%d %v", i, v, err)
		}
	}
	var inbox int
	if err := f.db.Pool.QueryRow(context.Background(), "SELECT count(*) FROM inbox_events").Scan(&inbox); err != nil || inbox != 2 {
		t.Errorf("inbox rows = %d (%v), want 2", inbox, err)
	}
	if n := opstest.Metric(t, f.reg, "projector_dead_lettered_total", map[string]string{"reason": "attributes_missing"}); n != 1 {
		t.Errorf("dead_lettered_total{attributes_missing} = %v, want 1", n)
	}
}

func TestDeadLetterPublishFailureNacks(t *testing.T) {
	t.Parallel()
	e, f := newTestEngine(t, items{}, "no-such-topic", 1)
	m := itemEvent(t, uuid.New(), 1, false)
	delete(m.Attributes, "event_id")
	a := newAcker()
	processAll(e, []msg{m}, []*testAcker{a})
	if acks, nacks := a.counts(); acks != 0 || nacks != 1 {
		t.Fatalf("acks=%d nacks=%d: a message whose dead letter was not published must be nacked", acks, nacks)
	}
	if n := opstest.Metric(t, f.reg, "projector_failed_total", map[string]string{"reason": "dead_letter_publish"}); n != 1 {
		t.Fatalf("failed_total{dead_letter_publish} = %v, want 1", n)
	}
}

func TestProcessAfterCloseNacks(t *testing.T) {
	t.Parallel()
	e, _ := newTestEngine(t, items{}, "dlq", 1)
	e.Close()
	a := newAcker()
	processAll(e, []msg{itemEvent(t, uuid.New(), 1, false)}, []*testAcker{a})
	if acks, nacks := a.counts(); acks != 0 || nacks != 1 {
		t.Fatalf("acks=%d nacks=%d, want a nack after Close", acks, nacks)
	}
}

func TestSpanContinuesTheProducersTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e, _ := newTestEngine(t, items{}, "dlq", 1, func(o *engineOptions) { o.Tracer = tp.Tracer("test") })
	m := itemEvent(t, uuid.New(), 1, false)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	m.Attributes["traceparent"] = "00-" + traceID + "-" + parentID + "-01"
	a := newAcker()
	before := time.Now()
	processAll(e, []msg{m}, []*testAcker{a})
	process, apply := spanNamed(t, rec, "process items"), spanNamed(t, rec, "apply items")
	if process.SpanContext().TraceID().String() != traceID || process.Parent().SpanID().String() != parentID {
		t.Fatalf("process span trace %s parent %s, want %s / %s", process.SpanContext().TraceID(), process.Parent().SpanID(), traceID, parentID)
	}
	if process.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("process span kind %s, want consumer", process.SpanKind())
	}
	if apply.Parent().SpanID() != process.SpanContext().SpanID() || apply.SpanContext().TraceID() != process.SpanContext().TraceID() {
		t.Fatalf("apply span parent %s trace %s, want the process span %s", apply.Parent().SpanID(), apply.SpanContext().TraceID(), process.SpanContext().SpanID())
	}
	// The process span covers the delivery from its arrival (the worker
	// starts it, dated back) to its ack, its apply span inside it.
	if process.StartTime().After(apply.StartTime()) || process.EndTime().Before(apply.EndTime()) || !process.StartTime().After(before) {
		t.Errorf("process span %s..%s, apply span %s..%s, delivered after %s: want the apply span within the process span, from the delivery",
			process.StartTime(), process.EndTime(), apply.StartTime(), apply.EndTime(), before)
	}
	for _, s := range []sdktrace.ReadOnlySpan{process, apply} {
		if got := telemetrytest.Attr(s, "eventrelay.outcome"); got != "applied" {
			t.Errorf("%s: eventrelay.outcome %q, want applied", s.Name(), got)
		}
	}
	if got := telemetrytest.Attr(process, "eventrelay.event_id"); got != m.EventID.String() {
		t.Errorf("process span eventrelay.event_id %q, want %s", got, m.EventID)
	}
}

// TestSpansRecordFailuresAndDeadLetters: a message the handler refuses
// deterministically fails its apply span and its process span (status
// error, error.type = reason) and the process span records the dead
// letter; a transient failure is recorded as outcome retry.
func TestSpansRecordFailuresAndDeadLetters(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	bad, flaky := uuid.New(), uuid.New()
	h := &poisoned{view: items{}, fail: map[string]error{
		bad.String():   projection.Permanent(projection.MappingError, errors.New("cannot map")),
		flaky.String(): errclass.New(errclass.Unavailable, errors.New("downstream flaked")),
	}}
	e, _ := newTestEngine(t, h, "dlq", 1, func(o *engineOptions) { o.Tracer = tp.Tracer("test") })
	for _, c := range []struct {
		id      uuid.UUID
		outcome string
		reason  string
		event   string
	}{
		{id: bad, outcome: "dead_lettered", reason: string(projection.MappingError), event: "dead-lettered"},
		{id: flaky, outcome: "retry", reason: string(errclass.Unavailable)},
	} {
		rec.Reset()
		processAll(e, []msg{itemEvent(t, c.id, 1, false)}, []*testAcker{newAcker()})
		process, apply := spanNamed(t, rec, "process items"), spanNamed(t, rec, "apply items")
		for _, s := range []sdktrace.ReadOnlySpan{process, apply} {
			if s.Status().Code != codes.Error || telemetrytest.Attr(s, "error.type") != c.reason {
				t.Errorf("%s of %s: status %v error.type %q, want error %s", s.Name(), c.outcome, s.Status(), telemetrytest.Attr(s, "error.type"), c.reason)
			}
		}
		if got := telemetrytest.Attr(process, "eventrelay.outcome"); got != c.outcome {
			t.Errorf("process span outcome %q, want %s", got, c.outcome)
		}
		var events []string
		for _, ev := range process.Events() {
			events = append(events, ev.Name)
		}
		if c.event != "" && !slices.Contains(events, c.event) {
			t.Errorf("process span events %v, want %q", events, c.event)
		}
	}
}

// spanNamed returns the one ended span called name.
func spanNamed(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d ended spans named %q, want 1", len(found), name)
	}
	return found[0]
}
