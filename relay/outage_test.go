package relay_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// freezer holds every Publish request while frozen, as an unresponsive
// Pub/Sub does: the client's publish timeout fires, and the held requests
// reach the server when it thaws (late copies, as a real outage can
// leave).
type freezer struct {
	mu   sync.Mutex
	ch   chan struct{} // nil: not frozen
	hits atomic.Int64
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ch = make(chan struct{})
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
}

func (f *freezer) React(req any) (bool, any, error) {
	if _, ok := req.(*pb.PublishRequest); !ok {
		return false, nil, nil
	}
	f.mu.Lock()
	ch := f.ch
	f.mu.Unlock()
	if ch != nil {
		f.hits.Add(1)
		select {
		case <-ch:
		case <-time.After(5 * time.Minute):
		}
	}
	return false, nil, nil
}

// loadWriter inserts the next version of perTx keys (round robin over
// keys) per transaction, every interval, until stopped.
type loadWriter struct {
	keys     []string
	versions map[string]int64 // written so far, per key
	stop     chan struct{}
	done     chan struct{}
	err      error
}

func startLoad(db *relaytest.DB, w *outbox.Writer, keys []string, perTx int, interval time.Duration) *loadWriter {
	l := &loadWriter{keys: keys, versions: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		next := 0
		for {
			evs := make([]outbox.Event, 0, perTx)
			for range perTx {
				k := keys[next%len(keys)]
				next++
				l.versions[k]++
				evs = append(evs, fx.Item(k, l.versions[k], 0))
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			l.err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
				_, err := w.InsertTx(ctx, tx, evs...)
				return err
			})
			cancel()
			if l.err != nil {
				return
			}
			select {
			case <-l.stop:
				return
			case <-time.After(interval):
			}
		}
	}()
	return l
}

// end stops the writer and returns the versions written per key.
func (l *loadWriter) end(t *testing.T) map[string]int64 {
	t.Helper()
	close(l.stop)
	<-l.done
	if l.err != nil {
		t.Fatalf("writer: %v", l.err)
	}
	return l.versions
}

// TestPubSubOutageHoldsTheTopic: Pub/Sub stops answering for longer than
// the retry budget (publish timeout × max attempts) while writers insert
// over many keys. The environment's fault holds the topic (readiness
// names it, the gauge shows it) and spends no event's attempts: no row
// fails for it, publishing resumes by itself when Pub/Sub answers, and
// every key reaches Pub/Sub complete and in version order. A poison row
// (INVALID_ARGUMENT: the event's own fault) still fails, alone.
func TestPubSubOutageHoldsTheTopic(t *testing.T) {
	t.Parallel()
	const nKeys, maxAttempts = 100, 3
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fx.ID(i + 1)
	}
	poison := fx.ID(nKeys + 1)
	bad := newFault(codes.InvalidArgument, poison)
	frozen := &freezer{}
	defer frozen.thaw()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t,
		pstest.ServerReactorOption{FuncName: "Publish", Reactor: bad},
		pstest.ServerReactorOption{FuncName: "Publish", Reactor: frozen})
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.MaxAttempts = maxAttempts
	cfg.Publish.Timeout = 500 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	w := fx.Writer(t, true)
	fx.Insert(t, db.Pool, w, fx.Item(poison, 1, 0), fx.Item(poison, 2, 0))

	load := startLoad(db, w, keys, 20, 100*time.Millisecond)
	fx.WaitFor(t, 60*time.Second, "publishing under load before the outage", func() bool {
		return fx.CountStatus(t, db.Pool, "published") >= 2*nKeys
	})

	frozen.freeze()
	// Frozen until some row met the publish timeout more often than its
	// retry budget allows (or failed for it), then a while longer.
	var sawReady, sawGauge atomic.Bool
	fx.WaitFor(t, 2*time.Minute, "the outage to outlast the retry budget", func() bool {
		rep := r.Health.Ready(context.Background())
		if s := fmt.Sprint(rep.Failures); !rep.OK && strings.Contains(s, fx.Topic) &&
			(strings.Contains(s, "timeout") || strings.Contains(s, "unavailable")) {
			sawReady.Store(true)
		}
		if opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": fx.Topic, "reason": "timeout"})+
			opstest.Metric(t, r.Registry, "outbox_publish_blocked", map[string]string{"topic": fx.Topic, "reason": "unavailable"}) > 0 {
			sawGauge.Store(true)
		}
		return outageRounds(t, db) > maxAttempts || fx.CountStatus(t, db.Pool, "failed") > 1
	})
	time.Sleep(time.Second)
	frozen.thaw()
	time.Sleep(2 * time.Second) // writers go on after the outage
	written := load.end(t)
	total := 2 // the poison key's
	for _, n := range written {
		total += int(n)
	}

	deadline := time.Now().Add(2 * time.Minute)
	for fx.CountStatus(t, db.Pool, "published") < total-2 {
		if time.Now().After(deadline) {
			t.Fatalf("publishing did not resume by itself: %s", statusSummary(t, db))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sawReady.Load() {
		t.Errorf("readiness never named topic %s and the outage (timeout or unavailable) while Pub/Sub was frozen", fx.Topic)
	}
	if !sawGauge.Load() {
		t.Errorf(`outbox_publish_blocked{topic=%q,reason="timeout"|"unavailable"} never 1 while Pub/Sub was frozen`, fx.Topic)
	}
	if frozen.hits.Load() == 0 {
		t.Fatal("no publish reached the frozen server")
	}
	// Only the poison row failed; its later version waits behind it.
	p := rowsOf(t, db, poison)
	if p[0].Status != "failed" || p[0].Reason == nil || *p[0].Reason != "payload_invalid" || p[1].Status != "pending" {
		t.Errorf("poison key = %+v, want v1 failed payload_invalid, v2 pending", p)
	}
	if s := statusSummary(t, db); fx.CountStatus(t, db.Pool, "failed") != 1 {
		t.Errorf("rows failed for the outage: %s", s)
	}
	var spent int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE attempts > 0 AND aggregate_id <> $1`, poison).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent != 0 {
		t.Errorf("%d rows spent attempts on the outage, want 0", spent)
	}
	// 0 lost, 0 order violations: the first copy of each version reached
	// Pub/Sub in version order (late copies of held requests are repeats).
	got := fx.Collect(t, ps.Messages()).Versions
	for _, k := range keys {
		want := make([]int64, written[k])
		for i := range want {
			want[i] = int64(i + 1)
		}
		if seen := firstSeen(got[k]); !slices.Equal(seen, want) {
			t.Errorf("key %s: first copies in order %v, want 1..%d", k, seen, written[k])
		}
	}
	fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(context.Background()).OK })
}

// outageRounds is the largest number of outage errors (timeout,
// unavailable) recorded in one row's error_history.
func outageRounds(t *testing.T, db *relaytest.DB) int {
	t.Helper()
	var n int
	err := db.Pool.QueryRow(context.Background(), `SELECT coalesce(max((SELECT count(*) FROM jsonb_array_elements(error_history) h
		WHERE h->>'reason' IN ('timeout', 'unavailable'))), 0) FROM outbox_events`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// statusSummary counts the rows by status and error_reason.
func statusSummary(t *testing.T, db *relaytest.DB) string {
	t.Helper()
	rs, err := db.Pool.Query(context.Background(), `SELECT status, coalesce(error_reason, ''), count(*) FROM outbox_events GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var parts []string
	for rs.Next() {
		var status, reason string
		var n int
		if err := rs.Scan(&status, &reason, &n); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, fmt.Sprintf("%s(%s)=%d", status, reason, n))
	}
	return strings.Join(parts, " ")
}
