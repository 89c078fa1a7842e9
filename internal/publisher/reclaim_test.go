package publisher_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
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
	ps.Topic(t, pt.Topic)
	pt.Insert(t, db.Pool, pt.Writer(t, false), pt.VideoEvent(pt.AggregateID(1), 1, 0))
	ctx := context.Background()
	// A replica that claimed the row and died: its lease runs out.
	s := data.NewStore(db.Pool)
	all := pt.AllPartitions(t, s)
	if _, err := s.Claim(ctx, biz.ClaimRequest{Worker: "dead", Token: uuid.New(), Limit: 10, Lease: 100 * time.Millisecond, Partitions: all}); err != nil {
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

	cfg := pt.Config("live", ps.Config)
	cfg.Outbox.ReclaimInterval = conf.Duration(200 * time.Millisecond)
	cfg.Outbox.Lease = conf.Duration(2 * time.Second)
	r := pt.StartRelay(t, db.Pool, cfg)
	pt.WaitFor(t, 10*time.Second, "the dead replica's claim taken over", func() bool {
		return opstest.Metric(t, r.Registry, "outbox_takeovers_total", nil) >= 1
	})
}
