package publisher_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/conf"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	"github.com/eventrelay/eventrelay/internal/publisher/biz"
	"github.com/eventrelay/eventrelay/internal/publisher/data"
	pt "github.com/eventrelay/eventrelay/internal/publisher/publishertest"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/relaytest"
)

// member is one replica's partition ownership, driven beat by beat.
type member struct {
	*biz.Ownership
	name string
	reg  *prometheus.Registry
}

func newMember(t *testing.T, s *data.Store, name string, lease, heartbeat time.Duration) member {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := biz.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return member{Ownership: biz.NewOwnership(s, name, lease, heartbeat, m, pt.Logger()), name: name, reg: reg}
}

func (m member) beat(t *testing.T) {
	t.Helper()
	if _, err := m.Beat(context.Background()); err != nil {
		t.Fatalf("heartbeat of %s: %v", m.name, err)
	}
}

func (m member) moves(t *testing.T, reason string) float64 {
	t.Helper()
	return opstest.Metric(t, m.reg, "outbox_partition_moves_total", map[string]string{"reason": reason})
}

// requireShares checks each member's count of partitions, that every
// partition is owned by exactly one of them, and that outbox_partitions
// agrees with what each member believes.
func requireShares(t *testing.T, s *data.Store, want map[string]int, members ...member) {
	t.Helper()
	rows, err := s.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	owners := map[int32]string{}
	for _, r := range rows {
		if r.Owner != "" && r.Leased {
			owners[r.Partition] = r.Owner
		}
	}
	got := map[string]int{}
	for _, m := range members {
		parts := m.Partitions()
		got[m.name] = len(parts)
		for _, p := range parts {
			if owners[p] != m.name {
				t.Fatalf("%s believes it owns partition %d, outbox_partitions says %q", m.name, p, owners[p])
			}
		}
		if n := opstest.Metric(t, m.reg, "outbox_partitions_owned", nil); int(n) != len(parts) {
			t.Fatalf("%s: outbox_partitions_owned = %v, owns %d", m.name, n, len(parts))
		}
	}
	if len(owners) != len(rows) {
		t.Fatalf("%d of %d partitions owned: %v", len(owners), len(rows), got)
	}
	for name, n := range want {
		if got[name] != n {
			t.Fatalf("partitions per replica = %v, want %v", got, want)
		}
	}
}

// TestOwnershipDividesPartitionsAndRebalances: one replica takes every
// partition; a second and a third get their fair share (ceil(64/n)) after
// the others released theirs, and a graceful leave hands the leaver's
// partitions to the others at their next heartbeat.
func TestOwnershipDividesPartitionsAndRebalances(t *testing.T) {
	t.Parallel()
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := data.NewStore(db.Pool)
	a := newMember(t, s, "a", time.Minute, time.Second)
	b := newMember(t, s, "b", time.Minute, time.Second)
	c := newMember(t, s, "c", time.Minute, time.Second)

	a.beat(t)
	requireShares(t, s, map[string]int{"a": 64}, a)

	b.beat(t) // joins: its share is 32, but nothing is free yet
	requireShares(t, s, map[string]int{"a": 64, "b": 0}, a, b)
	a.beat(t) // releases the 32 above its share
	b.beat(t) // takes them
	requireShares(t, s, map[string]int{"a": 32, "b": 32}, a, b)
	if a.moves(t, "released") != 32 || b.moves(t, "acquired") != 32 {
		t.Fatalf("moves: a released %v, b acquired %v; want 32 and 32", a.moves(t, "released"), b.moves(t, "acquired"))
	}

	c.beat(t)
	a.beat(t)
	b.beat(t)
	c.beat(t)
	requireShares(t, s, map[string]int{"a": 22, "b": 22, "c": 20}, a, b, c)
	a.beat(t) // balanced: no move
	requireShares(t, s, map[string]int{"a": 22, "b": 22, "c": 20}, a, b, c)

	if err := c.Leave(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.beat(t)
	b.beat(t)
	requireShares(t, s, map[string]int{"a": 32, "b": 32, "c": 0}, a, b, c)
	if c.moves(t, "released") != 20 || a.moves(t, "lost")+b.moves(t, "lost") != 0 {
		t.Fatalf("c released %v (want 20), lost a %v b %v (want 0)", c.moves(t, "released"), a.moves(t, "lost"), b.moves(t, "lost"))
	}
}

// TestCrashedReplicasPartitionsMoveAndArePublishedInOrder: a replica owns
// every partition, claims the heads of some keys and stops (no heartbeat,
// no release, no outcome: a crash). A live relay gets nothing while the
// dead replica's leases run (lease - heartbeat after its last heartbeat),
// then takes every partition, the dead replica's renewal is refused (its
// epoch is old), and the relay takes over its expired claims and publishes
// every key in order.
func TestCrashedReplicasPartitionsMoveAndArePublishedInOrder(t *testing.T) {
	t.Parallel()
	const keys, versions = 30, 6
	const lease, heartbeat = 3 * time.Second, 500 * time.Millisecond
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := data.NewStore(db.Pool)
	ps := gpubsubtest.New(t)
	ps.Topic(t, pt.Topic)
	pt.InsertRounds(t, db.Pool, pt.Writer(t, false), 0, keys, versions, 50)

	dead := newMember(t, s, "dead", lease, heartbeat)
	beat := time.Now()
	dead.beat(t)
	rows, err := s.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Owner != "dead" || r.LeaseUntil.After(beat.Add(lease-heartbeat+time.Second)) {
			t.Fatalf("partition %d: owner %q until %s; want dead until about %s (lease - heartbeat)", r.Partition, r.Owner, r.LeaseUntil, beat.Add(lease-heartbeat))
		}
	}
	claimed, err := s.Claim(context.Background(), biz.ClaimRequest{
		Worker: "dead", Token: uuid.New(), Limit: 40, Lease: lease, Partitions: dead.Partitions(),
	})
	if err != nil || len(claimed) != 40 {
		t.Fatalf("dead replica's claim: %d rows, %v", len(claimed), err)
	}

	cfg := pt.Config("live", ps.Config)
	cfg.Outbox.Lease = conf.Duration(lease)
	cfg.Outbox.PartitionHeartbeat = conf.Duration(heartbeat)
	cfg.Outbox.ReclaimInterval = conf.Duration(200 * time.Millisecond)
	live := pt.StartRelay(t, db.Pool, cfg)
	pt.WaitFor(t, time.Minute, "all rows published", func() bool {
		return pt.CountStatus(t, db.Pool, "published") == keys*versions
	})
	t.Logf("published everything %s after the dead replica's last heartbeat", time.Since(beat))

	pt.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, keys, versions)
	if got := opstest.Metric(t, live.Registry, "outbox_partition_moves_total", map[string]string{"reason": "acquired"}); got != 64 {
		t.Fatalf("live relay acquired %v partitions, want all 64", got)
	}
	if got := opstest.Metric(t, live.Registry, "outbox_takeovers_total", nil); got != 40 {
		t.Fatalf("live relay took over %v rows, want the dead replica's 40", got)
	}
	rows, err = s.Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Owner != "live" || r.Epoch != 2 {
			t.Fatalf("partition %d: owner %q epoch %d, want live at epoch 2", r.Partition, r.Owner, r.Epoch)
		}
	}
	// The dead replica thaws: its renewal is fenced out by the epoch.
	dead.beat(t)
	if got := dead.moves(t, "lost"); got != 64 {
		t.Fatalf("thawed replica lost %v partitions, want 64", got)
	}
	if got := len(dead.Partitions()); got != 0 {
		t.Fatalf("thawed replica still owns %d partitions (the live relay owns them all)", got)
	}
}

// TestOverlappingOwnersNeitherReorderNorDoubleClaim forces what a handover
// allows for a moment: replicas that claim from overlapping partition sets
// at once (all, the lower three quarters, the upper three quarters).
// Ownership only divides the work; the partition locks and the row-level
// rules must still give every row to one claim and claim each key's rows
// in version order, the next only after the previous batch completed (no
// key in two batches at once).
func TestOverlappingOwnersNeitherReorderNorDoubleClaim(t *testing.T) {
	t.Parallel()
	const keys, versions = 40, 25
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := data.NewStore(db.Pool)
	// Each key's versions are adjacent in id order, so a claim that passed
	// over a key's rows locked by another claim would reach its later rows.
	w := pt.Writer(t, false)
	for k := range keys {
		var evs []outbox.Event
		for v := 1; v <= versions; v++ {
			evs = append(evs, pt.VideoEvent(pt.AggregateID(k), int64(v), 0))
		}
		pt.Insert(t, db.Pool, w, evs...)
	}
	all := pt.AllPartitions(t, s)
	sets := [][]int32{all, all[:48], all[16:]}

	var mu sync.Mutex
	seen := map[string][]int64{} // versions per key, in claim order
	claims := map[int64]int{}
	inFlight := map[string]string{} // key -> worker whose batch holds it
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 3*4)
	for i, parts := range sets {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker := fmt.Sprintf("owner-%d-%d", i, w)
				for empty := 0; empty < 20; {
					token := uuid.New()
					evs, err := s.Claim(ctx, biz.ClaimRequest{Worker: worker, Token: token, Limit: 7, Lease: time.Minute, Partitions: parts})
					if err != nil {
						errs <- err
						return
					}
					if len(evs) == 0 {
						empty++
						time.Sleep(5 * time.Millisecond)
						continue
					}
					empty = 0
					mu.Lock()
					for _, e := range evs {
						if w, ok := inFlight[e.AggregateID]; ok && w != worker+token.String() {
							mu.Unlock()
							errs <- fmt.Errorf("%s claimed %s v%d while a batch of %s still held the key", worker, e.AggregateID, e.AggregateVersion, w)
							return
						}
						inFlight[e.AggregateID] = worker + token.String()
						seen[e.AggregateID] = append(seen[e.AggregateID], e.AggregateVersion)
						claims[e.ID]++
					}
					mu.Unlock()
					time.Sleep(2 * time.Millisecond) // publishing
					// The key is free for other claims once the outcome
					// commits, so it leaves inFlight just before.
					mu.Lock()
					for _, e := range evs {
						delete(inFlight, e.AggregateID)
					}
					mu.Unlock()
					var o biz.Outcomes
					for _, e := range evs {
						o.Published = append(o.Published, biz.Published{ID: e.ID, MessageID: fmt.Sprint(e.ID)})
					}
					a, err := s.Complete(ctx, token, o)
					if err != nil {
						errs <- err
						return
					}
					if len(a.Published) != len(evs) {
						errs <- fmt.Errorf("%s: %d of %d rows marked published (fenced: claimed twice?)", worker, len(a.Published), len(evs))
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(claims) != keys*versions {
		t.Fatalf("%d rows claimed, want %d", len(claims), keys*versions)
	}
	for id, n := range claims {
		if n != 1 {
			t.Fatalf("row %d claimed %d times", id, n)
		}
	}
	for k, vs := range seen {
		if len(vs) != versions || !slices.IsSorted(vs) {
			t.Fatalf("key %s claimed in order %v", k, vs)
		}
	}
}

// TestPartitionsMoveAtOnceOnJoinAndGracefulLeave: with a 20 s heartbeat,
// only the announcements can move partitions within seconds. A second
// relay that joins short of its share announces it, the first releases
// half at once and announces that, and the second takes them; a relay
// stopped gracefully announces its release and the other takes all 64.
func TestPartitionsMoveAtOnceOnJoinAndGracefulLeave(t *testing.T) {
	t.Parallel()
	const lease, heartbeat = 60 * time.Second, 20 * time.Second
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	s := data.NewStore(db.Pool)
	ps := gpubsubtest.New(t)
	ps.Topic(t, pt.Topic)
	start := func(name string) *pt.Relay {
		cfg := pt.Config(name, ps.Config)
		cfg.Outbox.Lease = conf.Duration(lease)
		cfg.Outbox.PartitionHeartbeat = conf.Duration(heartbeat)
		cfg.Outbox.MaxProcessing = conf.Duration(2 * lease)
		return pt.StartRelay(t, db.Pool, cfg)
	}
	owned := func() map[string]int {
		rows, err := s.Partitions(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, r := range rows {
			if r.Leased {
				n[r.Owner]++
			}
		}
		return n
	}
	start("first")
	pt.WaitFor(t, 10*time.Second, "the first relay owns all 64", func() bool { return owned()["first"] == 64 })
	joined := time.Now()
	second := start("second")
	pt.WaitFor(t, 10*time.Second, "32 each after the join (the heartbeat is 20s)", func() bool {
		n := owned()
		return n["first"] == 32 && n["second"] == 32
	})
	t.Logf("balanced %s after the join", time.Since(joined))
	left := time.Now()
	second.Stop(t)
	pt.WaitFor(t, 10*time.Second, "the first relay owns all 64 after the graceful leave", func() bool { return owned()["first"] == 64 })
	t.Logf("taken over %s after the leave", time.Since(left))
}
