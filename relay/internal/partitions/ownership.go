package partitions

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Metrics are the relay's collectors that Ownership updates.
type Metrics struct {
	// StoreErrors counts failures by op (partition_heartbeat,
	// partition_leave).
	StoreErrors *prometheus.CounterVec
	// PartitionsOwned is the number of partitions this replica owns.
	PartitionsOwned prometheus.Gauge
	// PartitionMoves counts ownership changes by reason (acquired,
	// released, lost).
	PartitionMoves *prometheus.CounterVec
}

// OwnedPartition is an outbox partition a replica owns, with the epoch it
// acquired it at (renewals and releases are fenced by both).
type OwnedPartition struct {
	Partition int32
	Epoch     int64
}

// HeartbeatRequest is one ownership heartbeat of a replica.
type HeartbeatRequest struct {
	Worker string
	// TTL is how long membership and the renewed or acquired leases last.
	TTL time.Duration
	// Owned are the partitions the replica believes it owns.
	Owned []OwnedPartition
}

// Heartbeat is the outcome of one heartbeat.
type Heartbeat struct {
	// Owned are the partitions owned after the heartbeat.
	Owned []OwnedPartition
	// Acquired, Released and Lost are this heartbeat's moves. Lost
	// partitions were owned before but taken over after their lease ended.
	Acquired []AcquiredPartition
	Released []int32
	Lost     []int32
	// Members is the number of live replicas, Partitions of partitions.
	Members, Partitions int
}

// AcquiredPartition is a partition taken by a heartbeat; PreviousOwner is
// empty when it was released, else the replica whose lease expired.
type AcquiredPartition struct {
	OwnedPartition
	PreviousOwner string
}

// FairShare is how many partitions each of members live replicas owns at
// most: ceil(partitions / members).
func FairShare(partitions, members int) int {
	if members < 1 {
		members = 1
	}
	return (partitions + members - 1) / members
}

// Ownership keeps a replica's share of the outbox partitions: a heartbeat
// renews its membership and its partitions' leases, releases partitions
// above its fair share and acquires free or expired ones up to it. Claims
// and reclaims read Partitions. Leases last TTL = lease - heartbeat, so a
// crashed replica's partitions expire at most TTL after its last heartbeat
// and a survivor takes them at its next heartbeat: within one lease of the
// crash.
type Ownership struct {
	store  *Store
	worker string
	every  time.Duration
	ttl    time.Duration
	m      Metrics
	log    *slog.Logger
	// Announce, when set, tells the other replicas to beat at once (they
	// call Nudge): after this one released partitions, and after it joined
	// short of its share (someone must release). Without it partitions move
	// at the others' next heartbeat.
	Announce func()
	nudge    chan struct{}

	mu         sync.Mutex
	owned      []OwnedPartition
	validUntil time.Time // local deadline of the leases of owned
	beats      int       // successful heartbeats
}

// NewOwnership returns the Ownership of worker: heartbeat every every,
// leases of lease - every.
func NewOwnership(store *Store, worker string, lease, every time.Duration, m Metrics, log *slog.Logger) *Ownership {
	return &Ownership{store: store, worker: worker, every: every, ttl: lease - every, m: m, log: log, nudge: make(chan struct{}, 1)}
}

// Nudge makes Run beat now (another replica announced a change); nudges
// coalesce.
func (o *Ownership) Nudge() {
	select {
	case o.nudge <- struct{}{}:
	default:
	}
}

func (o *Ownership) announce() {
	if o.Announce != nil {
		o.Announce()
	}
}

// Partitions returns the owned partitions in ascending order; none once
// their leases ended by the local clock (heartbeats failing).
func (o *Ownership) Partitions() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if time.Now().After(o.validUntil) {
		return nil
	}
	out := make([]int32, len(o.owned))
	for i, p := range o.owned {
		out[i] = p.Partition
	}
	slices.Sort(out)
	return out
}

// Beat runs one heartbeat. It reports whether partitions were acquired.
func (o *Ownership) Beat(ctx context.Context) (acquired bool, err error) {
	o.mu.Lock()
	owned := slices.Clone(o.owned)
	o.mu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, o.ttl)
	defer cancel()
	hb, err := o.store.Heartbeat(ctx, HeartbeatRequest{Worker: o.worker, TTL: o.ttl, Owned: owned})
	if err != nil {
		o.m.StoreErrors.WithLabelValues("partition_heartbeat").Inc()
		return false, err
	}
	o.mu.Lock()
	o.owned, o.validUntil = hb.Owned, start.Add(o.ttl)
	o.beats++
	first := o.beats == 1
	o.mu.Unlock()
	o.m.PartitionsOwned.Set(float64(len(hb.Owned)))
	o.m.PartitionMoves.WithLabelValues("acquired").Add(float64(len(hb.Acquired)))
	o.m.PartitionMoves.WithLabelValues("released").Add(float64(len(hb.Released)))
	o.m.PartitionMoves.WithLabelValues("lost").Add(float64(len(hb.Lost)))
	if len(hb.Lost) > 0 {
		o.log.Warn("lost outbox partitions (lease ended, taken over)", "partitions", hb.Lost)
	}
	if len(hb.Released) > 0 || (first && len(hb.Owned) < FairShare(hb.Partitions, hb.Members)) {
		o.announce()
	}
	if len(hb.Acquired) > 0 || len(hb.Released) > 0 {
		from := map[string][]int32{}
		for _, a := range hb.Acquired {
			from[a.PreviousOwner] = append(from[a.PreviousOwner], a.Partition)
		}
		o.log.Info("outbox partitions moved", "owned", len(hb.Owned), "members", hb.Members,
			"fair_share", FairShare(hb.Partitions, hb.Members), "acquired_from", from, "released", hb.Released)
	}
	return len(hb.Acquired) > 0, nil
}

// Run beats every heartbeat interval until ctx ends, calling acquired
// after a heartbeat that took partitions. A failed heartbeat is retried
// after at most a second (a replica without partitions claims nothing).
func (o *Ownership) Run(ctx context.Context, acquired func()) {
	t := time.NewTimer(o.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.nudge:
			t.Stop()
		}
		start := time.Now()
		got, ok := o.beat(ctx)
		if got {
			acquired()
		}
		if ok {
			t.Reset(max(0, o.every-time.Since(start)))
		} else {
			t.Reset(min(o.every, time.Second))
		}
	}
}

// Join runs the first heartbeat, before the first claim; a failure is
// logged and retried by Run (claims find nothing meanwhile).
func (o *Ownership) Join(ctx context.Context) { o.beat(ctx) }

// beat runs one heartbeat and logs its failure.
func (o *Ownership) beat(ctx context.Context) (acquired, ok bool) {
	got, err := o.Beat(ctx)
	if err != nil && ctx.Err() == nil {
		o.log.Error("outbox partition heartbeat failed: claims wait for partitions", "error", err, "error_reason", errclass.Of(err))
	}
	return got, err == nil
}

// Leave releases the owned partitions and the membership (graceful stop)
// and announces it, so the other replicas take them over at once (at their
// next heartbeat without Announce).
func (o *Ownership) Leave(ctx context.Context) error {
	o.mu.Lock()
	o.owned, o.validUntil = nil, time.Time{}
	o.mu.Unlock()
	released, err := o.store.Leave(ctx, o.worker)
	o.m.PartitionsOwned.Set(0)
	if err != nil {
		o.m.StoreErrors.WithLabelValues("partition_leave").Inc()
		return fmt.Errorf("leaving the outbox partitions: %w", err)
	}
	o.m.PartitionMoves.WithLabelValues("released").Add(float64(released))
	if released > 0 {
		o.announce()
	}
	return nil
}
