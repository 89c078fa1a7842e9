package publisher_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestBusyRelayClaimsWithoutNotifyAndIdleRelayIsWoken: coalesced wake-ups
// with a poll interval of an hour, so only NOTIFY and the relay's own
// cooldown claims can publish anything. An idle relay is armed and a
// single commit wakes it; a burst of single-event commits from four writers
// starting against the armed relay turns it busy at its first NOTIFY, the
// writers stop notifying (at most one notification per 20 commits) and
// every row is still published, in order;
// afterwards the relay arms again and the next lone commit wakes it; a
// stopped relay removes its row.
func TestBusyRelayClaimsWithoutNotifyAndIdleRelayIsWoken(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 4, 400
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, pt.Topic)
	ctx := context.Background()
	cfg := pt.Config("coalescing", ps.Config)
	cfg.Outbox.PollInterval = conf.Duration(time.Hour)
	// A long cooldown keeps the relay busy through the stalls of a loaded
	// test machine (a gap of a cooldown without commits makes it idle).
	cfg.Outbox.FetchCooldown = conf.Duration(250 * time.Millisecond)
	r := pt.StartRelay(t, db.Pool, cfg)
	armed := func() bool {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_wakeups WHERE worker_id = 'coalescing' AND armed_until > now()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	pt.WaitFor(t, 10*time.Second, "the idle relay armed", armed)

	w := pt.Writer(t, true)
	pt.Insert(t, db.Pool, w, pt.VideoEvent(pt.AggregateID(0), 1, 0))
	pt.WaitFor(t, 10*time.Second, "the lone commit published (NOTIFY)", func() bool { return len(ps.Messages()) == 1 })

	// The burst starts against an idle, armed relay: its first commit's
	// NOTIFY must turn the relay busy at once, not a cooldown later.
	pt.WaitFor(t, 10*time.Second, "the relay armed again before the burst", armed)

	// Count the notifications the burst sends.
	listener, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+pgx.Identifier{outbox.NotifyChannelFor(db.Schema)}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var notifications atomic.Int64
	lctx, stopListening := context.WithCancel(ctx)
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		for {
			if _, err := listener.WaitForNotification(lctx); err != nil {
				return
			}
			notifications.Add(1)
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 1; v <= perWriter; v++ {
				pt.Insert(t, db.Pool, w, pt.VideoEvent(pt.AggregateID(1+g), int64(v), 0))
			}
		}()
	}
	wg.Wait()
	commits := writers * perWriter
	pt.WaitFor(t, time.Minute, "the burst published", func() bool { return len(ps.Messages()) == 1+commits })
	stopListening()
	<-listened
	t.Logf("%d commits sent %d notifications; claims: %v non-empty, %v empty", commits, notifications.Load(),
		opstest.Metric(t, r.Registry, "outbox_claim_batch_size", nil), opstest.Metric(t, r.Registry, "outbox_empty_claims_total", nil))
	if n := notifications.Load(); n*20 > int64(commits) {
		t.Errorf("%d commits sent %d notifications: writers kept notifying a busy relay", commits, n)
	}
	d := pt.Collect(t, ps.Messages())
	for g := 0; g < writers; g++ {
		vs := d.Versions[pt.AggregateID(1+g)]
		if len(vs) != perWriter {
			t.Fatalf("aggregate %d: %d messages, want %d", 1+g, len(vs), perWriter)
		}
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("aggregate %d: versions out of order at position %d: %v", 1+g, i, vs)
			}
		}
	}

	pt.WaitFor(t, 10*time.Second, "the relay armed again after the burst", armed)
	pt.Insert(t, db.Pool, w, pt.VideoEvent(pt.AggregateID(0), 2, 0))
	pt.WaitFor(t, 10*time.Second, "the next lone commit published (NOTIFY)", func() bool { return len(ps.Messages()) == 2+commits })

	r.Stop(t)
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_wakeups`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("outbox_wakeups holds %d rows after the relay stopped, want 0 (writers then notify on every commit)", rows)
	}
}
