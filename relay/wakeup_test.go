package relay_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestBusyRelayClaimsWithoutNotifyAndIdleRelayIsWoken: coalesced wake-ups
// with a poll interval of an hour, so only NOTIFY and the relay's own
// cooldown claims can publish anything. An idle relay is armed and a
// single commit wakes it; a burst of single-event commits from four writers
// starting against the armed relay is published, every row in order (how
// often the writers notify a busy relay is a cost, measured by the bench's
// cost scenario, not asserted here);
// afterwards the relay arms again and the next lone commit wakes it; a
// stopped relay removes its row.
func TestBusyRelayClaimsWithoutNotifyAndIdleRelayIsWoken(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 4, 400
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ctx := context.Background()
	cfg := fx.NewConfig("coalescing", ps.Config)
	cfg.PollInterval = time.Hour
	// A long cooldown keeps the relay busy through the stalls of a loaded
	// test machine (a gap of a cooldown without commits makes it idle).
	cfg.FetchCooldown = 250 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	armed := func() bool {
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_wakeups WHERE worker_id = 'coalescing' AND armed_until > now()`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	fx.WaitFor(t, 10*time.Second, "the idle relay armed", armed)

	w := fx.Writer(t, true)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(0), 1, 0))
	fx.WaitFor(t, 10*time.Second, "the lone commit published (NOTIFY)", func() bool { return len(ps.Messages()) == 1 })

	// The burst starts against an idle, armed relay: its first commit's
	// NOTIFY must turn the relay busy at once, not a cooldown later.
	fx.WaitFor(t, 10*time.Second, "the relay armed again before the burst", armed)

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
				fx.Insert(t, db.Pool, w, fx.Item(fx.ID(1+g), int64(v), 0))
			}
		}()
	}
	wg.Wait()
	commits := writers * perWriter
	fx.WaitFor(t, time.Minute, "the burst published", func() bool { return len(ps.Messages()) == 1+commits })
	stopListening()
	<-listened
	t.Logf("%d commits sent %d notifications; claims: %v non-empty, %v empty", commits, notifications.Load(),
		opstest.Metric(t, r.Registry, "outbox_claim_batch_size", nil), opstest.Metric(t, r.Registry, "outbox_empty_claims_total", nil))
	if notifications.Load() == 0 {
		t.Errorf("%d commits sent no notification: the armed relay was never woken", commits)
	}
	d := fx.Collect(t, ps.Messages())
	for g := 0; g < writers; g++ {
		vs := d.Versions[fx.ID(1+g)]
		if len(vs) != perWriter {
			t.Fatalf("aggregate %d: %d messages, want %d", 1+g, len(vs), perWriter)
		}
		for i, v := range vs {
			if v != int64(i+1) {
				t.Fatalf("aggregate %d: versions out of order at position %d: %v", 1+g, i, vs)
			}
		}
	}

	fx.WaitFor(t, 10*time.Second, "the relay armed again after the burst", armed)
	fx.Insert(t, db.Pool, w, fx.Item(fx.ID(0), 2, 0))
	fx.WaitFor(t, 10*time.Second, "the next lone commit published (NOTIFY)", func() bool { return len(ps.Messages()) == 2+commits })

	r.Stop(t)
	var rows int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox_wakeups`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Errorf("outbox_wakeups holds %d rows after the relay stopped, want 0 (writers then notify on every commit)", rows)
	}
}

// TestCommitAfterTheRelayArmedIsPublished: a writer whose insert read the
// relay as busy (so it skips its NOTIFY) commits only after the relay
// went idle, armed its row and would have claimed once more. Polling is
// hourly, so the rows are published only if the relay's last claim comes
// after that commit.
func TestCommitAfterTheRelayArmedIsPublished(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ctx := context.Background()
	cfg := fx.NewConfig("settling", ps.Config)
	cfg.PollInterval = time.Hour
	cfg.FetchCooldown = 100 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	// state is the relay's row as outbox_notify reads it: its version
	// (xmin) and whether it is armed at the reading transaction's now().
	state := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) (version string, armed bool) {
		if err := q.QueryRow(ctx, `SELECT coalesce(max(xmin::text), ''), coalesce(bool_or(armed_until > now()), false)
			FROM outbox_wakeups WHERE worker_id = 'settling'`).Scan(&version, &armed); err != nil {
			t.Fatal(err)
		}
		return version, armed
	}
	emptyClaims := func() float64 { return opstest.Metric(t, r.Registry, "outbox_empty_claims_total", nil) }
	fx.WaitFor(t, 10*time.Second, "the idle relay armed", func() bool { _, armed := state(db.Pool); return armed })

	w := fx.Writer(t, true)
	published := 0
	var tx pgx.Tx
	for attempt := 1; tx == nil; attempt++ {
		if attempt > 50 {
			t.Fatal("no insert read the relay as busy in 50 attempts")
		}
		// A lone commit wakes the armed relay, which turns busy at once.
		fx.Insert(t, db.Pool, w, fx.Item(fx.ID(0), int64(attempt), 0))
		published++
		fx.WaitFor(t, 10*time.Second, "the woken relay busy", func() bool {
			_, armed := state(db.Pool)
			return !armed || len(ps.Messages()) == published
		})
		c, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before, armedBefore := state(c)
		if _, err := w.InsertTx(ctx, c, fx.Item(fx.ID(1), 1, 0)); err != nil {
			t.Fatal(err)
		}
		after, armedAfter := state(c)
		if armedBefore || armedAfter || before != after {
			// The relay's row changed around the insert: its outbox_notify
			// may have seen it armed. Publish and try again.
			if err := c.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			fx.WaitFor(t, 10*time.Second, "the relay idle again", func() bool {
				_, armed := state(db.Pool)
				return armed && len(ps.Messages()) == published
			})
			continue
		}
		tx = c // the insert read the busy row: no NOTIFY at commit
	}

	// The relay finds nothing (the insert is not committed) and arms. A
	// relay that claims once more without waiting for the writer does so
	// before the commit: an empty claim while its row stays armed, at the
	// same version. One that waits claims no more: the commit then follows
	// after two seconds.
	fx.WaitFor(t, 10*time.Second, "the relay armed", func() bool { _, armed := state(db.Pool); return armed })
	version, armed := state(db.Pool)
	empty := emptyClaims()
	claimedArmed := false
	for deadline := time.Now().Add(2 * time.Second); !claimedArmed && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		e := emptyClaims()
		v, a := state(db.Pool)
		claimedArmed = armed && a && v == version && e > empty
		if v != version || a != armed { // rewritten (woken, then armed again): start over
			version, armed = v, a
			empty = emptyClaims()
		}
	}
	t.Logf("insert read the busy relay at attempt %d; the relay claimed while armed before the commit: %v", published, claimedArmed)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fx.WaitFor(t, 10*time.Second, "the late commit published", func() bool { return len(ps.Messages()) == published+1 })
	if n := opstest.Metric(t, r.Registry, "outbox_store_errors_total", map[string]string{"op": "wakeup"}); n != 0 {
		t.Errorf("%v failed wake-up writes or looks for unannounced writers (the relay then claims by itself)", n)
	}
}
