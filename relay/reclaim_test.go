package relay_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relay/internal/claim"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestReclaimIsNotStarvedBySlowClaims: claims of other replicas that hold
// the claim lock longer than reclaim_interval, one queued behind the other,
// must not keep expired claims from being taken over. (Seen in the fault
// suite: a frozen replica's rows stayed claimed while the live replica's
// reclaim timed out on the lock every tick.)
func TestReclaimIsNotStarvedBySlowClaims(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	fx.Insert(t, db.Pool, fx.Writer(t, false), fx.Item(fx.ID(1), 1, 0))
	ctx := context.Background()
	// A replica that claimed the row and died: its lease runs out.
	all := fx.AllPartitions(t, db.Pool)
	if _, err := claim.NewStore(db.Pool).Claim(ctx, claim.Request{Worker: "dead", Token: uuid.New(), Limit: 10, Lease: 100 * time.Millisecond, Partitions: all}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	// Two slow claimers: one holds the claim lock 400ms while the other
	// waits for it, so a waiter that gives up within 400ms never gets it.
	hogCtx, stopHogs := context.WithCancel(ctx)
	var hogs sync.WaitGroup
	for range 2 {
		hogs.Add(1)
		go func() {
			defer hogs.Done()
			for hogCtx.Err() == nil {
				_ = pgx.BeginFunc(hogCtx, db.Pool, func(tx pgx.Tx) error {
					if err := outboxdb.New(tx).LockClaimPartitions(hogCtx, all); err != nil {
						return err
					}
					time.Sleep(400 * time.Millisecond)
					return nil
				})
			}
		}()
	}
	t.Cleanup(func() { stopHogs(); hogs.Wait() })

	cfg := fx.NewConfig("live", ps.Config)
	cfg.ReclaimInterval = 200 * time.Millisecond
	cfg.Lease = 2 * time.Second
	r := fx.StartRelay(t, db.Pool, cfg)
	fx.WaitFor(t, 10*time.Second, "the dead replica's claim taken over", func() bool {
		return opstest.Metric(t, r.Registry, "outbox_takeovers_total", nil) >= 1
	})
}
