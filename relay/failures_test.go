package relay_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay"
	"github.com/eventrelay/eventrelay/relaytest"
)

// keyFault fails Publish requests carrying one of its ordering keys with
// code while on.
type keyFault struct {
	code codes.Code
	keys map[string]bool
	on   atomic.Bool
	hits atomic.Int64
}

func (f *keyFault) React(req any) (bool, any, error) {
	r, ok := req.(*pb.PublishRequest)
	if !ok || !f.on.Load() {
		return false, nil, nil
	}
	for _, m := range r.GetMessages() {
		if f.keys[m.GetOrderingKey()] {
			f.hits.Add(1)
			return true, nil, status.Error(f.code, "injected "+f.code.String())
		}
	}
	return false, nil, nil
}

func newFault(code codes.Code, keys ...string) *keyFault {
	f := &keyFault{code: code, keys: map[string]bool{}}
	for _, k := range keys {
		f.keys[k] = true
	}
	f.on.Store(true)
	return f
}

type row struct {
	Version  int64
	Status   string
	Attempts int32
	Reason   *string
	History  []struct {
		At            time.Time `json:"at"`
		Reason        string    `json:"reason"`
		Attempt       int32     `json:"attempt"`
		NextAttemptAt time.Time `json:"next_attempt_at"`
		Held          bool      `json:"held"`
	}
}

func rowsOf(t *testing.T, db *relaytest.DB, aggregate string) []row {
	t.Helper()
	rs, err := db.Pool.Query(context.Background(), `SELECT aggregate_version, status, attempts, error_reason, error_history
		FROM outbox_events WHERE aggregate_id = $1 ORDER BY aggregate_version`, aggregate)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		var hist []byte
		if err := rs.Scan(&r.Version, &r.Status, &r.Attempts, &r.Reason, &hist); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(hist, &r.History); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func publishedVersions(t *testing.T, ps *gpubsubtest.Server, key string) []int64 {
	t.Helper()
	return fx.Collect(t, ps.Messages()).Versions[key]
}

// faultyRelay starts a relay on a fresh database and a pstest server
// whose Publish requests meet fault first; tune adjusts the relay's
// configuration.
func faultyRelay(t *testing.T, fault pstest.Reactor, tune func(*fx.Config)) (*relaytest.DB, *gpubsubtest.Server, *fx.Relay) {
	t.Helper()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: fault})
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	tune(&cfg)
	return db, ps, fx.StartRelay(t, db.Pool, cfg)
}

// TestOutageErrorsHoldWithoutSpendingAttempts: a key whose publishes fail
// with UNAVAILABLE holds its topic: its head goes back to pending again
// and again with no attempt spent (each error_history entry says held),
// its later rows wait untouched, other keys still publish (their rows
// probe the hold), and when Pub/Sub recovers the key publishes in order.
func TestOutageErrorsHoldWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	flaky, healthy := fx.ID(1), fx.ID(3)
	fault := newFault(codes.Unavailable, flaky)
	db, ps, r := faultyRelay(t, fault, func(cfg *fx.Config) {
		cfg.MaxAttempts = 2
		cfg.Publish.Timeout = 300 * time.Millisecond // the client's own retries give up quickly
	})

	w := fx.Writer(t, true)
	for v := int64(1); v <= 3; v++ {
		fx.Insert(t, db.Pool, w, fx.Item(flaky, v, 0), fx.Item(healthy, v, 0))
	}
	fx.WaitFor(t, 60*time.Second, "the flaky head held 4 times (twice its max attempts)", func() bool {
		return len(rowsOf(t, db, flaky)[0].History) >= 4
	})
	fault.on.Store(false)

	rs := rowsOf(t, db, flaky)
	head := rs[0]
	// The client retries UNAVAILABLE itself within publish.timeout, so the
	// error that reaches the relay is UNAVAILABLE or the deadline.
	transient := map[string]bool{"unavailable": true, "timeout": true}
	if head.Attempts != 0 || head.Reason == nil || !transient[*head.Reason] {
		t.Fatalf("flaky head = %+v, want pending, no attempt spent", head)
	}
	for i, h := range head.History {
		if h.Attempt != 0 || !h.Held || !transient[h.Reason] || !h.NextAttemptAt.After(h.At) {
			t.Fatalf("history[%d] = %+v, want a held entry (attempt 0) with a later next attempt", i, h)
		}
	}
	for _, later := range rs[1:] {
		if later.Attempts != 0 || later.Status != "pending" && later.Status != "published" {
			t.Fatalf("row behind the flaky head = %+v, want untouched", later)
		}
	}
	fx.WaitFor(t, 60*time.Second, "both keys published after recovery", func() bool {
		return len(firstSeen(publishedVersions(t, ps, flaky))) == 3 && len(firstSeen(publishedVersions(t, ps, healthy))) == 3
	})
	// First-seen versions: with a 300 ms publish timeout a loaded machine
	// times a healthy publish out too, and its retry may publish it again.
	for _, k := range []string{flaky, healthy} {
		if got := firstSeen(publishedVersions(t, ps, k)); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Fatalf("key %s published %v (first seen), want [1 2 3]", k, got)
		}
	}
	if n := fx.CountStatus(t, db.Pool, "failed"); n != 0 {
		t.Fatalf("%d rows failed for UNAVAILABLE, want 0", n)
	}
	if n := opstest.Metric(t, r.Registry, "outbox_failed_total", map[string]string{"reason": "unavailable"}) +
		opstest.Metric(t, r.Registry, "outbox_failed_total", map[string]string{"reason": "timeout"}); n < 4 {
		t.Fatalf("outbox_failed_total{reason=unavailable|timeout} = %v, want >= 4", n)
	}
}

// TestUnexplainedFailuresSpendAttemptsThenFail: an error no adapter
// explains (here UNIMPLEMENTED: unknown) may be the event's own fault: the
// key's head goes back to pending with growing attempts and backoff while
// its later rows wait and other keys flow, and ends failed with
// max_attempts_exceeded, its cause kept in error_history.
func TestUnexplainedFailuresSpendAttemptsThenFail(t *testing.T) {
	t.Parallel()
	doomed, healthy := fx.ID(2), fx.ID(3)
	down := newFault(codes.Unimplemented, doomed)
	db, ps, r := faultyRelay(t, down, func(cfg *fx.Config) { cfg.MaxAttempts = 5 })

	w := fx.Writer(t, true)
	for v := int64(1); v <= 3; v++ {
		fx.Insert(t, db.Pool, w, fx.Item(doomed, v, 0), fx.Item(healthy, v, 0))
	}
	fx.WaitFor(t, 60*time.Second, "doomed head failed", func() bool { return rowsOf(t, db, doomed)[0].Status == "failed" })
	d := rowsOf(t, db, doomed)
	if *d[0].Reason != "max_attempts_exceeded" || d[0].Attempts != 5 || len(d[0].History) != 5 {
		t.Fatalf("doomed head = %+v", d[0])
	}
	base := r.Config.BaseBackoff
	for i, h := range d[0].History {
		if h.Attempt != int32(i+1) || h.Reason != "unknown" || h.Held {
			t.Fatalf("history[%d] = %+v, want attempt %d, unknown", i, h, i+1)
		}
		if i == len(d[0].History)-1 {
			break // the failure: no next attempt
		}
		d := base << i
		if wait := h.NextAttemptAt.Sub(h.At); wait < d/2 || wait > d+time.Millisecond {
			t.Fatalf("history[%d] = %+v: wait %s, want backoff in [%s, %s]", i, h, wait, d/2, d)
		}
	}
	if d[1].Status != "pending" || d[1].Attempts != 0 || d[2].Status != "pending" {
		t.Fatalf("rows behind the failed head = %+v, want pending untouched", d[1:])
	}
	if got := publishedVersions(t, ps, doomed); len(got) != 0 {
		t.Fatalf("doomed key published %v", got)
	}
	if got := firstSeen(publishedVersions(t, ps, healthy)); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("healthy key published %v (first seen), want [1 2 3]", got)
	}
	fx.WaitFor(t, 5*time.Second, "metrics", func() bool {
		return opstest.Metric(t, r.Registry, "outbox_terminal_failed_total", map[string]string{"reason": "max_attempts_exceeded"}) == 1
	})
	if n := opstest.Metric(t, r.Registry, "outbox_retry_scheduled_total", nil); n != 4 {
		t.Fatalf("outbox_retry_scheduled_total = %v, want 4", n)
	}
	if n := opstest.Metric(t, r.Registry, "outbox_failed_total", map[string]string{"reason": "unknown"}); n != 5 {
		t.Fatalf("outbox_failed_total{reason=unknown} = %v, want 5", n)
	}
}

// TestLongBatchExtendsItsLease: a publish that takes over two leases does not
// lose its claim: no takeover, published once.
func TestLongBatchExtendsItsLease(t *testing.T) {
	t.Parallel()
	slow := fx.ID(1)
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	var delayed atomic.Bool
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: reactorFunc(func(req any) (bool, any, error) {
		r := req.(*pb.PublishRequest)
		if len(r.GetMessages()) > 0 && r.GetMessages()[0].GetOrderingKey() == slow && delayed.CompareAndSwap(false, true) {
			time.Sleep(4 * time.Second)
		}
		return false, nil, nil
	})})
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.Lease = 1500 * time.Millisecond
	cfg.ReclaimInterval = 100 * time.Millisecond
	cfg.Publish.Timeout = 10 * time.Second
	r := fx.StartRelay(t, db.Pool, cfg)
	fx.Insert(t, db.Pool, fx.Writer(t, true), fx.Item(slow, 1, 0))
	fx.WaitFor(t, 20*time.Second, "slow row published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 1 })
	if !delayed.Load() {
		t.Fatal("the publish was not delayed")
	}
	if n := opstest.Metric(t, r.Registry, "outbox_takeovers_total", nil); n != 0 {
		t.Fatalf("outbox_takeovers_total = %v, want 0 (lease extended)", n)
	}
	if got := publishedVersions(t, ps, slow); len(got) != 1 {
		t.Fatalf("published %v, want once", got)
	}
}

type reactorFunc func(req any) (bool, any, error)

func (f reactorFunc) React(req any) (bool, any, error) { return f(req) }

// TestDrainPastGraceReleasesUnfinishedRows: when the grace period ends
// with publishes still unanswered, the relay stops waiting, hands those
// rows back to pending (no attempt counted) and returns; nothing is left
// publishing.
func TestDrainPastGraceReleasesUnfinishedRows(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	// Publishes stall until the drain is over (a fixed stall let a loaded
	// machine reach the drain after the publishes had finished).
	unstall := make(chan struct{})
	var unstallOnce sync.Once
	defer unstallOnce.Do(func() { close(unstall) })
	reached := make(chan struct{}, 16)
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: reactorFunc(func(any) (bool, any, error) {
		select {
		case reached <- struct{}{}:
		default:
		}
		select {
		case <-unstall:
		case <-time.After(time.Minute):
		}
		return false, nil, nil
	})})
	ps.Topic(t, fx.Topic)
	r := fx.StartRelay(t, db.Pool, fx.NewConfig("relay", ps.Config))
	fx.Insert(t, db.Pool, fx.Writer(t, true), fx.Item(fx.ID(1), 1, 0), fx.Item(fx.ID(2), 1, 0))
	fx.WaitFor(t, 5*time.Second, "rows claimed", func() bool { return fx.CountInFlight(t, db.Pool) == 2 })
	// Claimed is not yet started: a drain hands unstarted batches back at
	// once. Wait until a publish reached the server.
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("no publish reached the server")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := relay.Drain(ctx, r.Relay)
	if err == nil {
		t.Fatal("Drain returned nil although the grace period ended with publishes in flight")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Drain took %s past a 300ms grace period", took)
	}
	unstallOnce.Do(func() { close(unstall) })
	if n := fx.CountInFlight(t, db.Pool); n != 0 {
		t.Fatalf("%d rows left in flight after the drain", n)
	}
	var attempts int
	if err := db.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(attempts), 0) FROM outbox_events WHERE status = 'pending' AND lock_token IS NULL`).Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("released rows: attempts %d, %v", attempts, err)
	}
	if n := opstest.Metric(t, r.Registry, "outbox_released_total", nil); n != 2 {
		t.Fatalf("outbox_released_total = %v, want 2", n)
	}
}

// firstSeen drops the versions already seen earlier in vs (duplicate
// publishes), keeping the order of first appearance.
func firstSeen(vs []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
