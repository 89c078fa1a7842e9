package command

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/eventrelay/eventrelay/health"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/outbox"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/relaytest/testevent"
)

// The topic-recreation test: the events topic is deleted and re-created
// while items are written. Pub/Sub detaches its subscriptions (topic
// _deleted-topic_): they receive nothing from the new topic. The
// detachment is reported within a minute by the relay's and the
// projector's readiness, by `pubsub ensure` (which creates the topic) and
// by `status`; `pubsub ensure --recreate-detached --redrive` re-creates
// the subscriptions and re-drives what they missed from the outbox; the
// read model converges (`verify`), no row failed, none is lost.
func TestTopicRecreatedUnderLoad(t *testing.T) {
	t.Parallel()
	ps, db, env := ensured(t)
	const topic = "items.events"
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.Publish.Subscriptions = map[string][]string{topic: {itemViewSubscription, "items.search"}}
	cfg.Publish.SubscriptionCheckInterval = 500 * time.Millisecond
	rl := fx.StartRelay(t, db.Pool, cfg)
	projHealth := health.NewHealth(time.Second)
	startItemView(t, ps, db, projector.Options{Health: projHealth, SubscriptionCheckInterval: 500 * time.Millisecond})

	stop := writeItems(t, db, 40)
	defer stop()
	waitUntil(t, time.Minute, "the read model fills", func() bool { return count(t, db, "SELECT count(*) FROM item_view") >= 40 })

	ctx := context.Background()
	if err := ps.Client.TopicAdminClient.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: gpubsub.TopicName(gpubsubtest.Project, topic)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // writes go on while the topic is missing

	r := relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig)
	if r.code != ExitProblem || !strings.Contains(r.stdout, "created") || !strings.Contains(r.stdout, "items.view") || !strings.Contains(r.stdout, gpubsub.DetachedFound) || !strings.Contains(r.stdout, "relayctl replay --include-published --topic items.events --since") {
		t.Fatalf("pubsub ensure after the topic was deleted: exit %d, stdout\n%s\nwant exit %d: the topic created, items.view detached, the re-drive offered", r.code, r.stdout, ExitProblem)
	}
	reported := time.Now()
	waitUntil(t, time.Minute, "the relay's readiness names the detached subscription", func() bool {
		rep := rl.Health.Ready(ctx)
		return !rep.OK && strings.Contains(fmt.Sprint(rep.Failures), "items.view") && strings.Contains(fmt.Sprint(rep.Failures), "detached")
	})
	waitUntil(t, time.Minute, "the projector's readiness names its detached subscription", func() bool {
		rep := projHealth.Ready(ctx)
		return !rep.OK && strings.Contains(fmt.Sprint(rep.Failures), "subscription items.view of projection item-view is detached")
	})
	r = relayctl(t, env, "status", "-f", pubsubConfig)
	if r.code != ExitProblem || !strings.Contains(r.stdout, "subscription items.view is detached") {
		t.Fatalf("status while detached: exit %d, want %d naming items.view detached", r.code, ExitProblem)
	}
	if d := time.Since(reported); d > time.Minute {
		t.Errorf("the detachment was reported %s after the topic was re-created, want within a minute", d)
	}

	r = relayctl(t, env, "pubsub", "ensure", "-f", pubsubConfig, "--recreate-detached", "--redrive", "--by", "test", "--why", "topic re-created")
	if r.code != ExitOK || !strings.Contains(r.stdout, gpubsub.Recreated) || !strings.Contains(r.stdout, "re-drive: relayctl replay --include-published --topic items.events") {
		t.Fatalf("pubsub ensure --recreate-detached --redrive: exit %d, want %d, the subscriptions recreated and the re-drive run", r.code, ExitOK)
	}
	written := stop()

	var last result
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last verify: exit %d\n%s%s", last.code, last.stdout, last.stderr)
			relayctl(t, env, "status", "-f", pubsubConfig)
		}
	})
	waitUntil(t, 2*time.Minute, "verify reports CONVERGED", func() bool {
		last = relayctlQuiet(t, env, "verify")
		return last.code == ExitOK && strings.Contains(last.stdout, "CONVERGED")
	})
	if n := count(t, db, "SELECT count(*) FROM outbox_events WHERE status = 'failed'"); n != 0 {
		t.Errorf("%d outbox row(s) failed, want 0", n)
	}
	if n := count(t, db, "SELECT count(*) FROM items i JOIN item_view v ON v.item_id = i.id AND v.version = i.version"); n != 40 {
		t.Errorf("%d of 40 items at their version in item_view after %d writes, want 40", n, written)
	}
	waitUntil(t, time.Minute, "both ready again", func() bool { return rl.Health.Ready(ctx).OK && projHealth.Ready(ctx).OK })
	r = relayctl(t, env, "status", "-f", pubsubConfig)
	if strings.Contains(r.stdout, "detached") {
		t.Errorf("status after the repair still reports a detached subscription")
	}
}

// writeItems updates n items round-robin, each write bumping the item's
// version in items and its outbox event in one transaction, until the
// returned stop is called; stop returns how many writes were made.
func writeItems(t *testing.T, db *testDB, n int) (stop func() int) {
	t.Helper()
	w, err := outbox.NewWriter(outbox.Config{Encoder: testevent.Encode, DefaultTopic: "items.events"})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	var (
		done    = make(chan struct{})
		wg      sync.WaitGroup
		writes  atomic.Int64
		once    sync.Once
		failure atomic.Value
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			id, version := ids[i%n], int64(i/n+1)
			name := fmt.Sprintf("name-%d", i)
			err := pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
				if _, err := tx.Exec(context.Background(), `INSERT INTO items (id, name, version) VALUES ($1, $2, $3)
					ON CONFLICT (id) DO UPDATE SET name = excluded.name, version = excluded.version`, id, name, version); err != nil {
					return err
				}
				_, err := w.InsertTx(context.Background(), tx, itemEvent(id, name, version, false))
				return err
			})
			if err != nil {
				failure.Store(err)
				return
			}
			writes.Add(1)
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return func() int {
		once.Do(func() { close(done) })
		wg.Wait()
		if err, _ := failure.Load().(error); err != nil {
			t.Errorf("writing items: %v", err)
		}
		return int(writes.Load())
	}
}

// waitUntil polls cond until it holds or budget passes.
func waitUntil(t *testing.T, budget time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", budget, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
