package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/embedded"
)

// Subscriptions of the event topic (configs/pubsub.yaml).
const (
	SubscriptionPG = "catalog.video.projection-pg"
	SubscriptionES = "catalog.video.projection-es"
)

// TopicRecreate is what happened while the event topic was missing.
type TopicRecreate struct {
	// Blocked: every publisher's readiness named the topic held (for
	// topic_not_found, or its declared subscriptions detached) and its
	// outbox_publish_blocked or outbox_subscription_detached gauge was 1.
	Blocked bool
	// Readiness is the first readiness answer that named the block.
	Readiness string
	// Missing is how long the topic was gone; Resumed how long after it
	// was re-created every publisher cleared the block by itself.
	Missing, Resumed time.Duration
	// HeldBack counts published events the deleted subscriptions still
	// held; they were re-driven from the outbox.
	HeldBack int
	// Written counts the writes made while the topic was missing.
	Written int
}

// RecreateTopic deletes the event topic while the workload runs and
// re-creates it, the way a topic goes missing for a while after a Pub/Sub
// restart or a botched deploy:
//
//  1. the topic is deleted and write makes events for it (whether or not
//     the workload still runs); the publishers keep running and must hold
//     publishing to it (readiness names the topic and topic_not_found, or
//     its publish.subscriptions detached; gauge outbox_publish_blocked or
//     outbox_subscription_detached) with no row failed;
//  2. once every publisher shows the block, the harness waits until what
//     was published before is applied (the subscriptions keep delivering
//     their backlog), then deletes the subscriptions of the deleted topic:
//     on Cloud Pub/Sub they are detached and receive nothing from a
//     re-created topic of the same name;
//  3. `relayctl pubsub ensure` re-creates the topic and the subscriptions.
//     Nobody touches the publishers: they must resume by themselves.
//
// Published events the deleted subscriptions still held (the drain timed
// out) are re-driven from the outbox while the topic is blocked, so the
// claim's id order publishes them before later versions of their keys.
func (s *Stack) RecreateTopic(ctx context.Context, chk *OrderChecker, write func(context.Context) int) (TopicRecreate, error) {
	var res TopicRecreate
	client, err := embedded.NewPubSubClient(ctx, s.PubSubConfig())
	if err != nil {
		return res, err
	}
	defer client.Close()
	topic := topicName(s.Cfg.Project, Topic)
	if err := client.TopicAdminClient.DeleteTopic(ctx, &pb.DeleteTopicRequest{Topic: topic}); err != nil {
		return res, fmt.Errorf("deleting %s: %w", Topic, err)
	}
	gone := time.Now()
	s.Sup.Logf("fault: topic %s deleted mid-run; the publishers must pause it (topic_not_found), failing no row", Topic)
	res.Written = write(ctx)
	s.Sup.Logf("fault: topic deleted: %d write(s) made while it is missing", res.Written)

	err = poll(ctx, 250*time.Millisecond, time.Minute, func() (bool, string) {
		s.Scraper.ScrapeAll(ctx)
		pubs := s.publishing()
		all := len(pubs) > 0
		var state []string
		for _, p := range pubs {
			// Held either way: by the publish that answered topic_not_found,
			// or, with publish.subscriptions declared, by the check that saw
			// the topic's subscriptions detached before any publish.
			blocked := s.Scraper.Last(p.Name(), "outbox_publish_blocked", "topic="+Topic, "reason=topic_not_found")
			detached := s.Scraper.Last(p.Name(), "outbox_subscription_detached", "topic="+Topic)
			ready := p.readiness(ctx)
			named := strings.Contains(ready, Topic) && (strings.Contains(ready, "topic_not_found") || strings.Contains(ready, "detached"))
			if named && res.Readiness == "" {
				res.Readiness = p.Name() + ": " + ready
			}
			all = all && named && (blocked > 0 || detached > 0) // Last sums the series (one per subscription)
			state = append(state, fmt.Sprintf("%s: outbox_publish_blocked %v, outbox_subscription_detached %v, readiness %q", p.Name(), blocked, detached, ready))
		}
		return all, strings.Join(state, "; ")
	})
	if err != nil {
		s.Sup.Logf("fault: topic deleted: the publishers did not all show the block: %v", err)
	}
	res.Blocked = err == nil

	var heldBack []string
	if err := s.WaitDrained(ctx, chk, 2*time.Second, 20*time.Second); err != nil {
		s.Sup.Logf("fault: topic deleted: %v", err)
		if heldBack, err = s.publishedUnappliedIDs(ctx); err != nil {
			return res, err
		}
	}
	chk.Suspend() // its subscription is deleted and re-created
	defer chk.Resume()
	for _, sub := range []string{SubscriptionPG, SubscriptionES, AuditSubscription} {
		err := client.SubscriptionAdminClient.DeleteSubscription(ctx, &pb.DeleteSubscriptionRequest{Subscription: subscriptionName(s.Cfg.Project, sub)})
		if err != nil && status.Code(err) != codes.NotFound {
			return res, fmt.Errorf("deleting subscription %s of the deleted topic: %w", sub, err)
		}
	}
	if len(heldBack) > 0 {
		s.Sup.Logf("fault: topic deleted: %d published event(s) never delivered by the deleted subscriptions; re-driven from the outbox", len(heldBack))
		if _, err := s.Relayctl(ctx, "replay", "--ids", strings.Join(heldBack, ","), "--include-published",
			"--by", "e2e-suite", "--why", "held back by subscriptions deleted with their topic"); err != nil {
			return res, err
		}
		res.HeldBack = len(heldBack)
	}
	if err := s.EnsurePubSub(ctx); err != nil {
		return res, err
	}
	back := time.Now()
	res.Missing = back.Sub(gone)
	chk.Resume()
	s.Sup.Logf("fault: topic %s re-created after %s (relayctl pubsub ensure); the publishers must resume by themselves", Topic, res.Missing.Round(time.Millisecond))

	err = poll(ctx, 250*time.Millisecond, 2*time.Minute, func() (bool, string) {
		s.Scraper.ScrapeAll(ctx)
		var state []string
		clear := true
		for _, p := range s.Publishers {
			blocked := s.Scraper.Last(p.Name(), "outbox_publish_blocked", "topic="+Topic)
			detached := s.Scraper.Last(p.Name(), "outbox_subscription_detached", "topic="+Topic)
			clear = clear && blocked == 0 && detached == 0
			state = append(state, fmt.Sprintf("%s: outbox_publish_blocked %v, outbox_subscription_detached %v", p.Name(), blocked, detached))
		}
		return clear, strings.Join(state, "; ")
	})
	res.Resumed = time.Since(back)
	if err != nil {
		return res, fmt.Errorf("publishing did not resume by itself after the topic was re-created: %w", err)
	}
	s.Sup.Logf("fault: publishing to %s resumed by itself %s after the topic was re-created", Topic, res.Resumed.Round(time.Millisecond))
	return res, nil
}

// readiness is the process's readiness answer: "200 OK" or the status and
// body of a refusal ("" when it does not answer).
func (p *Proc) readiness(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.spec.ReadyURL, nil)
	if err != nil {
		return ""
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.TrimSpace(resp.Status + " " + string(b))
}
