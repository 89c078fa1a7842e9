package projector_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/projection"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest"
)

// The test's domain: counters, whose state-carrying event "counter.set"
// holds the counter's value as a wrapperspb.Int64Value (no domain proto).
const counterSet = "counter.set"

func counterType() projection.EventType {
	return projection.EventType{Name: counterSet, SchemaVersions: []int32{1}, Decode: func(b []byte) (projection.Envelope, error) {
		var v wrapperspb.Int64Value
		if err := proto.Unmarshal(b, &v); err != nil {
			return projection.Envelope{}, fmt.Errorf("decoding Int64Value: %w", err)
		}
		return projection.Envelope{Payload: &v}, nil
	}}
}

// calls counts handler invocations per event id.
type calls struct {
	mu sync.Mutex
	n  map[uuid.UUID]int
}

func (c *calls) add(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[id]++
}

func (c *calls) of(id uuid.UUID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

// counterRows is the Tx read model: the Example's version-guarded upsert into
// order_totals (a counter per order), counting its calls.
func counterRows(c *calls) projection.TxHandlerFunc {
	return func(ctx context.Context, tx pgx.Tx, ev *projection.Event) (projection.Outcome, error) {
		c.add(ev.ID)
		return applyTotal(ctx, tx, ev)
	}
}

// index is the Batch read model: an in-memory, version-guarded key/value index
// standing in for a search engine.
type index struct {
	calls *calls
	mu    sync.Mutex
	docs  map[string][2]int64 // aggregate -> value, version
}

func (x *index) HandleBatch(_ context.Context, evs []*projection.Event) ([]projection.Result, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]projection.Result, len(evs))
	for i, ev := range evs {
		x.calls.add(ev.ID)
		if d, ok := x.docs[ev.AggregateID]; ok && d[1] >= ev.AggregateVersion {
			out[i] = projection.Result{Outcome: projection.Stale}
			continue
		}
		x.docs[ev.AggregateID] = [2]int64{ev.Payload.(*wrapperspb.Int64Value).GetValue(), ev.AggregateVersion}
		out[i] = projection.Result{Outcome: projection.Applied}
	}
	return out, nil
}

func (x *index) doc(id string) [2]int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.docs[id]
}

type event struct {
	id        uuid.UUID
	typ       string
	aggregate string
	version   int64
	body      []byte
}

func setEvent(t *testing.T, aggregate string, version, value int64) event {
	t.Helper()
	body, err := proto.Marshal(wrapperspb.Int64(value))
	if err != nil {
		t.Fatal(err)
	}
	return event{id: uuid.New(), typ: counterSet, aggregate: aggregate, version: version, body: body}
}

func publish(t *testing.T, ps *gpubsubtest.Server, topic string, evs ...event) {
	t.Helper()
	p := ps.Client.Publisher(topic)
	defer p.Stop()
	for _, e := range evs {
		m := &pubsub.Message{Data: e.body, Attributes: map[string]string{
			contract.AttrEventID: e.id.String(), contract.AttrEventType: e.typ, contract.AttrAggregateType: "counter",
			contract.AttrAggregateID: e.aggregate, contract.AttrVersion: strconv.FormatInt(e.version, 10), contract.AttrSchemaVersion: "1",
		}}
		if _, err := p.Publish(t.Context(), m).Get(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond until it holds, failing after a minute (a bound
// against hangs, not a speed check).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	give := time.After(time.Minute)
	for !cond() {
		select {
		case <-give:
			t.Fatalf("still not after a minute: %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// deadLetters pulls up to want messages from sub, acks them and returns
// their attributes by event id.
func deadLetters(t *testing.T, ps *gpubsubtest.Server, sub string, want int) map[string]map[string]string {
	t.Helper()
	name := gpubsub.SubscriptionName(gpubsubtest.Project, sub)
	got := map[string]map[string]string{}
	eventually(t, fmt.Sprintf("%d dead letters on %s", want, sub), func() bool {
		resp, err := ps.Client.SubscriptionAdminClient.Pull(t.Context(), &pb.PullRequest{Subscription: name, MaxMessages: 10, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		var acks []string
		for _, rm := range resp.GetReceivedMessages() {
			got[rm.GetMessage().GetAttributes()[contract.AttrEventID]] = rm.GetMessage().GetAttributes()
			acks = append(acks, rm.GetAckId())
		}
		if len(acks) > 0 {
			if err := ps.Client.SubscriptionAdminClient.Acknowledge(t.Context(), &pb.AcknowledgeRequest{Subscription: name, AckIds: acks}); err != nil {
				t.Fatal(err)
			}
		}
		return len(got) >= want
	})
	return got
}

// newCounterStack gives a test its Postgres schema with the order_totals
// table and a Pub/Sub double (opts are its reactors) holding the counters
// topic and, for each of the projections counters-pg and counters-idx, an
// ordered subscription (counters.pg, counters.idx) and a dead-letter topic
// (counters.dlq-pg, counters.dlq-idx).
func newCounterStack(t *testing.T, opts ...pstest.ServerReactorOption) (*relaytest.DB, *gpubsubtest.Server) {
	t.Helper()
	db, ps := relaytest.NewDB(t, relaytest.Options{Schema: "items"}), gpubsubtest.New(t, opts...)
	if _, err := db.Pool.Exec(t.Context(), `CREATE TABLE order_totals (order_id text PRIMARY KEY, total bigint NOT NULL, version bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"counters", "counters.dlq-pg", "counters.dlq-idx"} {
		ps.Topic(t, topic)
	}
	ps.Subscription(t, "counters.pg", "counters", gpubsubtest.SubscriptionOptions{Ordered: true})
	ps.Subscription(t, "counters.idx", "counters", gpubsubtest.SubscriptionOptions{Ordered: true})
	return db, ps
}

// pgProjection is counters-pg: the Tx projection of counters.pg into
// order_totals, h handling counter.set.
func pgProjection(t *testing.T, h projection.TxHandler, b projector.BatchOptions) projector.Projection {
	t.Helper()
	rows := projection.NewRegistry[projection.TxHandler]()
	if err := rows.Register(counterType(), h); err != nil {
		t.Fatal(err)
	}
	return projector.Projection{Name: "counters-pg", Subscription: "counters.pg", DeadLetterTopic: "counters.dlq-pg",
		Tx: rows, Batching: b, Tables: []string{"order_totals"}}
}

// idxProjection is counters-idx: the Batch projection of counters.idx into
// the in-memory index x.
func idxProjection(t *testing.T, x *index, b projector.BatchOptions) projector.Projection {
	t.Helper()
	reg := projection.NewRegistry[projection.BatchHandler]()
	if err := reg.Register(counterType(), x); err != nil {
		t.Fatal(err)
	}
	return projector.Projection{Name: "counters-idx", Subscription: "counters.idx", DeadLetterTopic: "counters.dlq-idx", Batch: reg, Batching: b}
}

// register registers each projection with p.
func register(t *testing.T, p *projector.Projector, prs ...projector.Projection) {
	t.Helper()
	for _, pr := range prs {
		if err := p.Register(pr); err != nil {
			t.Fatal(err)
		}
	}
}

// run runs p until the returned stop is called, or the test ends; stop
// returns what Run returned.
func run(t *testing.T, p *projector.Projector) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-ran })
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// TestEmbeddedProjectorAppliesDedupesAndDeadLetters embeds the projector
// through its public API with two projections of one topic — a Postgres
// table (Tx) and an in-memory index (Batch) — and shows, on a
// real Postgres and pstest: events applied (an older version skipped as
// stale), a redelivered event absorbed by each inbox without reaching the
// handlers again, and a malformed body and an unknown event type
// dead-lettered with their reason.
func TestEmbeddedProjectorAppliesDedupesAndDeadLetters(t *testing.T) {
	t.Parallel()
	db, ps := newCounterStack(t)
	ps.Subscription(t, "dlq-pg-read", "counters.dlq-pg", gpubsubtest.SubscriptionOptions{})
	ps.Subscription(t, "dlq-idx-read", "counters.dlq-idx", gpubsubtest.SubscriptionOptions{})

	rowCalls, idxCalls := &calls{n: map[uuid.UUID]int{}}, &calls{n: map[uuid.UUID]int{}}
	idx := &index{calls: idxCalls, docs: map[string][2]int64{}}
	metrics, h := prometheus.NewRegistry(), health.NewHealth(0)
	p, err := projector.New(db.Pool, ps.Client, projector.Options{Registerer: metrics, Health: h,
		Receive: projector.ReceiveOptions{NumGoroutines: 2, RetryMin: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	batching := projector.BatchOptions{Linger: time.Millisecond, RetryBackoffMin: time.Millisecond}
	register(t, p, pgProjection(t, counterRows(rowCalls), batching), idxProjection(t, idx, batching))
	stop := run(t, p)

	// One at a time, so that v1 is not skipped as stale behind v2. Each is
	// waited for until both inboxes recorded it too: the Batch projection records
	// its inbox rows after the handler returned, and a redelivery arriving in
	// between is not known as a duplicate yet (it meets the version guard
	// instead), which made the duplicate count below flaky under load.
	v1, v2 := setEvent(t, "c1", 1, 10), setEvent(t, "c1", 2, 20)
	for _, ev := range []event{v1, v2} {
		publish(t, ps, "counters", ev)
		eventually(t, fmt.Sprintf("c1 at v%d in both read models and both inboxes", ev.version), func() bool {
			var version, recorded int64
			err := db.Pool.QueryRow(t.Context(), `SELECT (SELECT version FROM order_totals WHERE order_id = 'c1'),
				(SELECT count(*) FROM inbox_events WHERE event_id = $1)`, ev.id).Scan(&version, &recorded)
			return err == nil && version == ev.version && idx.doc("c1")[1] == ev.version && recorded == 2
		})
	}

	// Redelivery: the same event (same event_id) arrives again, as after a
	// lost ack. Then an older version of c1, never seen before: stale.
	stale := setEvent(t, "c1", 1, 5)
	publish(t, ps, "counters", v2, stale)
	for _, name := range []string{"counters-pg", "counters-idx"} {
		eventually(t, name+" counts the duplicate and the stale event", func() bool {
			l := map[string]string{"projection": name}
			return opstest.Metric(t, metrics, "projector_duplicate_total", l) == 1 &&
				opstest.Metric(t, metrics, "projector_stale_skipped_total", l) == 1
		})
	}
	if n, m := rowCalls.of(v2.id), idxCalls.of(v2.id); n != 1 || m != 1 {
		t.Fatalf("the redelivered event reached the handlers again: Tx handler %d calls, Batch handler %d", n, m)
	}
	var value int64
	if err := db.Pool.QueryRow(t.Context(), `SELECT total FROM order_totals WHERE order_id = 'c1'`).Scan(&value); err != nil || value != 20 || idx.doc("c1")[0] != 20 {
		t.Fatalf("after the stale event: row value %d (%v), index %v; want 20", value, err, idx.doc("c1"))
	}

	// Bad input: an undecodable body and an event type nobody registered.
	malformed := event{id: uuid.New(), typ: counterSet, aggregate: "c2", version: 1, body: []byte{0xff}}
	unknown := setEvent(t, "c3", 1, 1)
	unknown.typ = "counter.exploded"
	publish(t, ps, "counters", malformed, unknown)
	for _, tc := range []struct{ projection, sub string }{{"counters-pg", "dlq-pg-read"}, {"counters-idx", "dlq-idx-read"}} {
		got := deadLetters(t, ps, tc.sub, 2)
		for id, reason := range map[uuid.UUID]string{malformed.id: "payload_invalid", unknown.id: "event_type_unknown"} {
			a := got[id.String()]
			if a["error_reason"] != reason || a["projection"] != tc.projection || a["error"] == "" {
				t.Errorf("%s: dead letter of %s has error_reason %q, projection %q, error %q; want %s", tc.sub, id, a["error_reason"], a["projection"], a["error"], reason)
			}
		}
	}
	if r := h.Ready(t.Context()); !r.OK {
		t.Errorf("readiness while receiving: %+v", r)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if !h.Draining() {
		t.Error("Health not draining after Run returned")
	}
}

// Invalid options and projections are refused with the field named.
func TestInvalidInputNamesTheField(t *testing.T) {
	t.Parallel()
	db, ps := relaytest.NewDB(t, relaytest.Options{Schema: "items"}), gpubsubtest.New(t)
	if _, err := projector.New(db.Pool, ps.Client, projector.Options{Receive: projector.ReceiveOptions{AckDeadline: time.Second}}); err == nil ||
		!containsAll(err.Error(), "Options.Receive.AckDeadline") {
		t.Errorf("short ack deadline: %v", err)
	}
	if _, err := projector.New(db.Pool, ps.Client, projector.Options{Schema: "elsewhere"}); err == nil || !containsAll(err.Error(), "Options.Schema", "search_path") {
		t.Errorf("schema not matching the pool: %v", err)
	}
	if _, err := projector.New(db.Pool, ps.Client, projector.Options{InboxRetentionBatchSize: -1}); err == nil ||
		!containsAll(err.Error(), "Options.InboxRetentionBatchSize") {
		t.Errorf("negative inbox retention batch size: %v", err)
	}
	p, err := projector.New(db.Pool, ps.Client, projector.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	reg := projection.NewRegistry[projection.TxHandler]()
	if err := reg.Register(counterType(), counterRows(&calls{n: map[uuid.UUID]int{}})); err != nil {
		t.Fatal(err)
	}
	good := projector.Projection{Name: "a", Subscription: "sub-a", DeadLetterTopic: "dlq-a", Tx: reg}
	cases := []struct {
		mutate func(*projector.Projection)
		want   string
	}{
		{func(pr *projector.Projection) { pr.Name = "" }, "Projection.Name"},
		{func(pr *projector.Projection) { pr.Subscription = "" }, "Projection.Subscription"},
		{func(pr *projector.Projection) { pr.DeadLetterTopic = "x" }, "Projection.DeadLetterTopic"},
		{func(pr *projector.Projection) { pr.Tx = nil }, "Projection.Tx"},
		{func(pr *projector.Projection) { pr.Batch = projection.NewRegistry[projection.BatchHandler]() }, "exactly one"},
		{func(pr *projector.Projection) { pr.Tx = projection.NewRegistry[projection.TxHandler]() }, "no event type"},
		{func(pr *projector.Projection) { pr.Batching.Size = -1 }, "Projection.Batching.Size"},
		{func(pr *projector.Projection) { pr.InboxRetention = -time.Hour }, "Projection.InboxRetention"},
	}
	for _, tc := range cases {
		pr := good
		tc.mutate(&pr)
		if err := p.Register(pr); err == nil || !containsAll(err.Error(), tc.want) {
			t.Errorf("Register(%+v) = %v, want an error naming %s", pr, err, tc.want)
		}
	}
	if err := p.Register(good); err != nil {
		t.Fatal(err)
	}
	again := good
	again.Name = "b"
	if err := p.Register(again); err == nil || !containsAll(err.Error(), "Projection.Subscription", "sub-a") {
		t.Errorf("second projection on one subscription: %v", err)
	}
	if err := p.Register(good); err == nil || !containsAll(err.Error(), "Projection.Name") {
		t.Errorf("name registered twice: %v", err)
	}
	if _, err := projector.New(nil, ps.Client, projector.Options{}); err == nil || !containsAll(err.Error(), "pgxpool") {
		t.Errorf("nil pool: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
