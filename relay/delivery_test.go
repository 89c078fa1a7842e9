package relay_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestThreeRelaysDeliverEverythingOnceInOrder: 3 replicas on 20,000 events
// over 500 aggregates, written while the relays run. Every event reaches
// Pub/Sub exactly once (no crash), and per aggregate the versions arrive
// strictly increasing.
func TestThreeRelaysDeliverEverythingOnceInOrder(t *testing.T) {
	t.Parallel()
	const aggregates, versions = 500, 40
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)

	var relays []*fx.Relay
	for i := 0; i < 3; i++ {
		cfg := fx.NewConfig(fmt.Sprintf("relay-%d", i), ps.Config)
		cfg.Concurrency = 4
		cfg.BulkSize = 250
		// Exactly once holds only while no publish times out: a timed-out
		// publish is retried and may have reached the server (at least
		// once). 2 s timed out on a machine loaded by parallel builds.
		cfg.Publish.Timeout = 30 * time.Second
		relays = append(relays, fx.StartRelay(t, db.Pool, cfg))
	}
	start := time.Now()
	fx.InsertRounds(t, db.Pool, fx.Writer(t, true), 0, aggregates, versions, 500)
	inserted := time.Since(start)
	fx.WaitFor(t, 2*time.Minute, "all rows published", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == aggregates*versions
	})
	t.Logf("inserted %d events in %s, all published after %s", aggregates*versions, inserted, time.Since(start))

	d := fx.Collect(t, ps.Messages())
	d.RequireExactlyOnceInOrder(t, aggregates, versions)

	rows, err := db.Pool.Query(context.Background(), `SELECT locked_by, count(*) FROM outbox_events GROUP BY 1 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	perWorker := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		perWorker[w] = n
	}
	if len(perWorker) != 3 {
		t.Fatalf("rows published per worker = %v, want all 3 replicas to take part", perWorker)
	}
	t.Logf("rows per replica: %v", perWorker)
	var processed float64
	for _, r := range relays {
		processed += opstest.Metric(t, r.Registry, "outbox_processed_total", nil)
	}
	if processed != aggregates*versions {
		t.Fatalf("outbox_processed_total summed over replicas = %v, want %d", processed, aggregates*versions)
	}
}

// TestOrderedSubscriptionReceivesVersionsInOrder checks the path to a real
// message-ordering subscription (smaller: pstest delivers ~100 msg/s per
// stream).
func TestOrderedSubscriptionReceivesVersionsInOrder(t *testing.T) {
	t.Parallel()
	const aggregates, versions = 20, 10
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ps.Subscription(t, "ordered", fx.Topic, gpubsubtest.SubscriptionOptions{Ordered: true})
	for i := 0; i < 2; i++ {
		fx.StartRelay(t, db.Pool, fx.NewConfig(fmt.Sprintf("relay-%d", i), ps.Config))
	}
	fx.InsertRounds(t, db.Pool, fx.Writer(t, true), 0, aggregates, versions, 7)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sub := ps.Client.Subscriber(gpubsub.SubscriptionName(gpubsubtest.Project, "ordered"))
	sub.ReceiveSettings.NumGoroutines = 4
	// Pub/Sub delivers at least once: a message whose ack is late (a loaded
	// machine) comes back with the later messages of its key, e.g.
	// 1..9 8 9 10. Order means first arrivals in version order.
	var mu sync.Mutex
	got := map[string][]string{}
	seen := map[string]map[string]bool{}
	distinct, redelivered := 0, 0
	err := sub.Receive(ctx, func(_ context.Context, m *pubsub.Message) {
		mu.Lock()
		defer mu.Unlock()
		m.Ack()
		k, v := m.OrderingKey, m.Attributes["version"]
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		if seen[k][v] {
			redelivered++
			return
		}
		seen[k][v] = true
		got[k] = append(got[k], v)
		if distinct++; distinct == aggregates*versions {
			cancel()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if distinct != aggregates*versions || len(got) != aggregates {
		t.Fatalf("received %d distinct messages over %d keys, want %d over %d", distinct, len(got), aggregates*versions, aggregates)
	}
	for k, vs := range got {
		for i, v := range vs {
			if v != fmt.Sprint(i+1) {
				t.Fatalf("key %s received versions %v (first arrivals), want 1..%d in order", k, vs, versions)
			}
		}
	}
	t.Logf("%d messages redelivered", redelivered)
}

// TestWakeUpByNotifyAndByPolling: with LISTEN on and a 1-minute poll, a
// committed row is published long before the poll could find it (NOTIFY);
// with LISTEN off, the 200 ms poll finds it. The 20 s bound only separates
// the two (a loaded machine can take seconds); speed is the bench's job.
func TestWakeUpByNotifyAndByPolling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		listen bool
		poll   time.Duration
	}{{"notify", true, time.Minute}, {"poll", false, 200 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
			ps := gpubsubtest.New(t)
			ps.Topic(t, fx.Topic)
			cfg := fx.NewConfig("relay", ps.Config)
			cfg.ListenOff = !tc.listen
			cfg.PollInterval = tc.poll
			fx.StartRelay(t, db.Pool, cfg)
			time.Sleep(300 * time.Millisecond) // first (empty) claim and LISTEN are done
			for i := 1; i <= 3; i++ {
				start := time.Now()
				fx.Insert(t, db.Pool, fx.Writer(t, tc.listen), fx.Item(fx.ID(1), int64(i), 0))
				fx.WaitFor(t, 20*time.Second, "publish after commit", func() bool { return len(ps.Messages()) == i })
				t.Logf("commit -> published in %s", time.Since(start))
			}
		})
	}
}

// TestRetentionDeletesPublishedRows: the relay's retention loop removes
// published rows older than the retention in bounded batches and leaves
// the others.
func TestRetentionDeletesPublishedRows(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.Retention = time.Second
	cfg.RetentionInterval = 200 * time.Millisecond
	cfg.RetentionBatchSize = 7
	r := fx.StartRelay(t, db.Pool, cfg)
	fx.InsertRounds(t, db.Pool, fx.Writer(t, true), 0, 10, 2, 20)
	fx.WaitFor(t, 10*time.Second, "published rows deleted", func() bool {
		var n int
		_ = db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events`).Scan(&n)
		return n == 0 && len(ps.Messages()) == 20
	})
	if n := opstest.Metric(t, r.Registry, "outbox_retention_deleted_total", nil); n != 20 {
		t.Fatalf("outbox_retention_deleted_total = %v, want 20", n)
	}
}
