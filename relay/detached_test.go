package relay_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
	"github.com/eventrelay/eventrelay/internal/ops/opstest"
	fx "github.com/eventrelay/eventrelay/internal/relayfixture"
	"github.com/eventrelay/eventrelay/relaytest"
)

// TestDetachedSubscriptionHoldsItsTopic: the topic is deleted and
// re-created; Pub/Sub detaches its subscription (topic _deleted-topic_),
// which then receives nothing. Publishing to the topic must not go on as
// if it reached a consumer: the relay holds the topic (rows stay pending,
// none fails), readiness and outbox_subscription_detached name the
// subscription, and once it is re-created every held row reaches it.
func TestDetachedSubscriptionHoldsItsTopic(t *testing.T) {
	t.Parallel()
	const sub = "items.view"
	key := fx.ID(1)
	db := relaytest.NewDB(t, relaytest.Options{Schema: "items"})
	ps := gpubsubtest.New(t)
	ps.Topic(t, fx.Topic)
	ps.Subscription(t, sub, fx.Topic, gpubsubtest.SubscriptionOptions{Ordered: true})
	cfg := fx.NewConfig("relay", ps.Config)
	cfg.Publish.Subscriptions = map[string][]string{fx.Topic: {sub}}
	cfg.Publish.SubscriptionCheckInterval = 300 * time.Millisecond
	r := fx.StartRelay(t, db.Pool, cfg)
	w := fx.Writer(t, true)

	fx.Insert(t, db.Pool, w, fx.Item(key, 1, 0))
	fx.WaitFor(t, 30*time.Second, "version 1 published", func() bool { return fx.CountStatus(t, db.Pool, "published") == 1 })
	if got := pullVersions(t, ps, sub); got != 1 {
		t.Fatalf("subscription received %d message(s) before the topic was deleted, want 1", got)
	}

	ctx := context.Background()
	topic := gpubsub.TopicName(gpubsubtest.Project, fx.Topic)
	if err := ps.Client.TopicAdminClient.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topic}); err != nil {
		t.Fatal(err)
	}
	ps.Topic(t, fx.Topic) // re-created: the subscription stays detached
	fx.WaitFor(t, 30*time.Second, "readiness names the detached subscription", func() bool {
		rep := r.Health.Ready(ctx)
		s := fmt.Sprint(rep.Failures)
		return !rep.OK && strings.Contains(s, sub) && strings.Contains(s, "detached")
	})
	// Written once the check saw it: a row written before may be published
	// within one check interval (the re-drive covers those).
	fx.Insert(t, db.Pool, w, fx.Item(key, 2, 0), fx.Item(key, 3, 0))

	if n := opstest.Metric(t, r.Registry, "outbox_subscription_detached", map[string]string{"topic": fx.Topic, "subscription": sub}); n != 1 {
		t.Errorf("outbox_subscription_detached = %v while detached, want 1", n)
	}
	time.Sleep(2 * time.Second) // several checks and claims
	if n := fx.CountStatus(t, db.Pool, "published"); n != 1 {
		t.Fatalf("%d row(s) marked published while the topic's only subscription is detached (they reached no consumer), want 1", n)
	}
	if n := fx.CountStatus(t, db.Pool, "failed"); n != 0 {
		t.Fatalf("%d row(s) failed while held, want 0 (the environment's fault)", n)
	}

	name := gpubsub.SubscriptionName(gpubsubtest.Project, sub)
	if err := ps.Client.SubscriptionAdminClient.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: name}); err != nil {
		t.Fatal(err)
	}
	ps.Subscription(t, sub, fx.Topic, gpubsubtest.SubscriptionOptions{Ordered: true})
	fx.WaitFor(t, 60*time.Second, "held rows published after the subscription was re-created", func() bool {
		return fx.CountStatus(t, db.Pool, "published") == 3
	})
	if got := pullVersions(t, ps, sub); got != 2 {
		t.Errorf("re-created subscription received %d message(s), want the 2 held", got)
	}
	fx.WaitFor(t, 30*time.Second, "ready again", func() bool { return r.Health.Ready(ctx).OK })
	if n := opstest.Metric(t, r.Registry, "outbox_subscription_detached", map[string]string{"topic": fx.Topic, "subscription": sub}); n != 0 {
		t.Errorf("outbox_subscription_detached = %v once attached, want 0", n)
	}
}

// pullVersions pulls and acks what sub holds now and returns how many
// messages it got.
func pullVersions(t *testing.T, ps *gpubsubtest.Server, sub string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := gpubsub.SubscriptionName(gpubsubtest.Project, sub)
	n := 0
	for {
		resp, err := ps.Client.SubscriptionAdminClient.Pull(ctx, &pb.PullRequest{Subscription: name, MaxMessages: 100, ReturnImmediately: true}) //nolint:staticcheck // a test peek
		if err != nil {
			t.Fatalf("pulling %s: %v", sub, err)
		}
		if len(resp.GetReceivedMessages()) == 0 {
			return n
		}
		var ids []string
		for _, m := range resp.GetReceivedMessages() {
			ids = append(ids, m.GetAckId())
		}
		n += len(ids)
		if err := ps.Client.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: name, AckIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
}
