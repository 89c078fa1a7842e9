package main

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/google/uuid"

	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/postgres/outboxdb"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// slowPublish delays every Publish RPC by delay per message so batches are
// in flight when a process is killed or stopped (requests carry the
// messages of many keys: a per-request delay would not slow a batch down).
type slowPublish struct {
	delay atomic.Int64 // nanoseconds per message
}

func (s *slowPublish) React(req any) (bool, any, error) {
	if r, ok := req.(*pb.PublishRequest); ok {
		time.Sleep(time.Duration(s.delay.Load()) * time.Duration(len(r.GetMessages())))
	}
	return false, nil, nil
}

// TestKillNineMidBatchTakeover: two publisher processes; one is killed
// with SIGKILL while it holds claimed rows. The other takes them over after
// the lease, nothing is lost, the dead worker's late writes (its lock
// token) change nothing, and per key the first-seen versions still
// increase.
//
// The workload has more ordering keys than a batch holds (500 keys, bulk
// size 100), so both processes can hold batches at once: a claim skips keys
// with a row in flight, and with fewer keys than a batch every batch spans
// all keys and the replica that finishes one claims the next, leaving the
// other nothing to hold (the test waited for that in vain under load). The
// victim is frozen (SIGSTOP) before its claims are read, so what it holds
// cannot change between that read and the kill.
func TestKillNineMidBatchTakeover(t *testing.T) {
	t.Parallel()
	const aggregates, versions = 500, 6
	db := relaytest.NewDB(t, relaytest.Options{Schema: testSchema})
	slow := &slowPublish{}
	slow.delay.Store(int64(15 * time.Millisecond)) // a batch takes ~1.5s: the kill lands mid-batch
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: slow})
	ps.Topic(t, fx.Topic)
	fx.InsertRounds(t, db.Pool, fx.Writer(t, false), 0, aggregates, versions, 500)

	env := map[string]string{"OUTBOX_BULK_SIZE": "100", "OUTBOX_CONCURRENCY": "2"}
	victim := startPublisher(t, "victim", db.URL, ps.Config, env)
	survivor := startPublisher(t, "survivor", db.URL, ps.Config, env)

	var held []heldRow
	fx.WaitFor(t, 60*time.Second, "victim frozen holding claimed rows after some were published", func() bool {
		if fx.CountStatus(t, db.Pool, "published") == 0 {
			return false
		}
		victim.signal(syscall.SIGSTOP)
		if held = heldBy(t, db, "victim"); len(held) > 0 {
			return true
		}
		victim.signal(syscall.SIGCONT) // between batches: let it claim again
		return false
	})
	victim.signal(syscall.SIGKILL) // held is what the dead process holds (or held until a takeover)
	victim.wait(5 * time.Second)
	t.Logf("victim killed holding %d rows", len(held))
	slow.delay.Store(0)

	fx.WaitFor(t, 90*time.Second, "all rows published", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == aggregates*versions
	})
	d := fx.Collect(t, ps.Messages())
	dups := d.RequireFirstSeenInOrder(t, aggregates, versions)
	t.Logf("%d messages, %d duplicates (republished after the takeover)", d.Total, dups)

	if n := survivor.metric("outbox_takeovers_total"); n < float64(len(held)) {
		t.Fatalf("survivor outbox_takeovers_total = %v, want >= %d", n, len(held))
	}
	var takenOver int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events
		WHERE error_history @> '[{"reason": "lease_expired", "worker": "victim"}]' AND status = 'published'`).Scan(&takenOver); err != nil {
		t.Fatal(err)
	}
	if takenOver < len(held) {
		t.Fatalf("%d published rows record the takeover from the victim, want >= %d", takenOver, len(held))
	}

	// The dead worker's late marks (simulated with its token, through the
	// relay's queries) change nothing.
	q := outboxdb.New(db.Pool)
	byToken := map[uuid.UUID][]int64{}
	for _, h := range held {
		byToken[h.token] = append(byToken[h.token], h.id)
	}
	for token, ids := range byToken {
		p := outboxdb.MarkOutboxPublishedParams{LockToken: token, Ids: ids}
		for range ids {
			p.MessageIds = append(p.MessageIds, "late-from-the-dead")
		}
		marked, err := q.MarkOutboxPublished(context.Background(), p)
		if err != nil || len(marked) != 0 {
			t.Fatalf("late mark with the dead worker's token = %+v, %v; want nothing changed", marked, err)
		}
		if n, err := q.ReleaseOutboxEvents(context.Background(), outboxdb.ReleaseOutboxEventsParams{LockToken: token, Ids: ids}); err != nil || n != 0 {
			t.Fatalf("late release with the dead worker's token = %d, %v", n, err)
		}
	}
	var late int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE message_id = 'late-from-the-dead' OR status <> 'published'`).Scan(&late); err != nil || late != 0 {
		t.Fatalf("rows changed by late marks or not published: %d, %v", late, err)
	}
	survivor.signal(syscall.SIGTERM)
	if code := survivor.wait(15 * time.Second); code != 0 {
		t.Fatalf("survivor exit code %d", code)
	}
}

type heldRow struct {
	id    int64
	token uuid.UUID
}

func heldBy(t *testing.T, db *relaytest.DB, worker string) []heldRow {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT id, lock_token FROM outbox_events WHERE status = 'pending' AND lock_token IS NOT NULL AND locked_by = $1`, worker)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []heldRow
	for rows.Next() {
		var h heldRow
		if err := rows.Scan(&h.id, &h.token); err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// TestSIGTERMUnderLoadDrainsAndExitsZero: a publisher stopped with SIGTERM
// while busy exits 0 within the grace period and leaves no row in flight
// under its worker id; a second process finishes the rest, and nothing is
// published twice.
func TestSIGTERMUnderLoadDrainsAndExitsZero(t *testing.T) {
	t.Parallel()
	const aggregates, versions = 100, 30
	db := relaytest.NewDB(t, relaytest.Options{Schema: testSchema})
	slow := &slowPublish{}
	slow.delay.Store(int64(2 * time.Millisecond))
	ps := gpubsubtest.New(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: slow})
	ps.Topic(t, fx.Topic)
	fx.InsertRounds(t, db.Pool, fx.Writer(t, false), 0, aggregates, versions, 500)

	grace := 5 * time.Second
	first := startPublisher(t, "first", db.URL, ps.Config, map[string]string{
		"OUTBOX_GRACE_PERIOD_SECONDS": "5", "OUTBOX_BULK_SIZE": "100", "OUTBOX_CONCURRENCY": "4",
		"OUTBOX_LEASE_SECONDS": "15", // exactly once is asserted: no takeover on a loaded machine
	})
	fx.WaitFor(t, 30*time.Second, "busy publishing", func() bool {
		return len(heldBy(t, db, "first")) > 0 && fx.CountStatus(t, db.Pool, "published") > 200
	})
	start := time.Now()
	first.signal(syscall.SIGTERM)
	code := first.wait(grace + 5*time.Second)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if took > grace+time.Second {
		t.Fatalf("exit took %s, grace period %s", took, grace)
	}
	if h := heldBy(t, db, "first"); len(h) != 0 {
		t.Fatalf("%d rows left in flight under the stopped worker", len(h))
	}
	published := fx.CountStatus(t, db.Pool, "published")
	t.Logf("drained and exited 0 in %s; %d of %d rows published", took, published, aggregates*versions)
	if published == aggregates*versions {
		t.Fatal("everything was published before SIGTERM: the test did not stop a busy publisher")
	}

	slow.delay.Store(0)
	second := startPublisher(t, "second", db.URL, ps.Config, map[string]string{"OUTBOX_LEASE_SECONDS": "15"})
	fx.WaitFor(t, 60*time.Second, "the rest published", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == aggregates*versions
	})
	fx.Collect(t, ps.Messages()).RequireExactlyOnceInOrder(t, aggregates, versions)
	second.signal(syscall.SIGINT)
	if code := second.wait(15 * time.Second); code != 0 {
		t.Fatalf("second exit code %d", code)
	}
}
