package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// subscriptionCheckTimeout bounds one GetSubscription of the watch.
const subscriptionCheckTimeout = 10 * time.Second

// subscriptionWatch holds publishing to a topic while a subscription
// declared for it (PublishOptions.Subscriptions) is missing, detached
// (its topic was deleted: it receives nothing from the re-created topic)
// or attached elsewhere: Pub/Sub would accept every publish and deliver it
// to no consumer. A held topic's rows wait pending, rescheduled to the
// next check, and are never counted as attempts or failed; readiness check
// "subscriptions" and gauge outbox_subscription_detached name the
// subscription until a check finds it attached again (relayctl pubsub
// ensure re-creates it). Each declared subscription is read once per
// interval (GetSubscription, permission pubsub.subscriptions.get), never
// per publish; a subscription the relay may not read is logged once and
// does not hold its topic.
type subscriptionWatch struct {
	client   *pubsub.Client
	project  string
	declared map[string][]string // topic -> subscription ids
	interval time.Duration
	gauge    *prometheus.GaugeVec
	log      *slog.Logger

	mu      sync.Mutex
	checked map[string]bool                // topic -> checked at least once
	bad     map[string]subscriptionProblem // subscription -> its problem
	denied  map[string]bool                // subscriptions the relay may not read (logged once)
	next    time.Time                      // the next check
}

type subscriptionProblem struct {
	topic string
	state gpubsub.Attachment
	since time.Time
}

func newSubscriptionWatch(client *pubsub.Client, o Options, gauge *prometheus.GaugeVec, log *slog.Logger) *subscriptionWatch {
	return &subscriptionWatch{
		client: client, project: client.Project(), declared: o.Publish.Subscriptions,
		interval: o.Publish.SubscriptionCheckInterval, gauge: gauge, log: log,
		checked: map[string]bool{}, bad: map[string]subscriptionProblem{}, denied: map[string]bool{},
	}
}

// run checks every declared subscription now and then every interval
// until ctx ends.
func (w *subscriptionWatch) run(ctx context.Context) {
	if len(w.declared) == 0 {
		return
	}
	every(ctx, w.interval, w.check)
}

// check reads each declared subscription once and updates the holds.
func (w *subscriptionWatch) check(ctx context.Context) {
	w.mu.Lock()
	w.next = time.Now().Add(w.interval)
	w.mu.Unlock()
	topics := make([]string, 0, len(w.declared))
	for topic := range w.declared {
		topics = append(topics, topic)
	}
	sort.Strings(topics)
	for _, topic := range topics {
		for _, sub := range w.declared[topic] {
			cctx, cancel := context.WithTimeout(ctx, subscriptionCheckTimeout)
			state, _, err := gpubsub.CheckAttachment(cctx, w.client, w.project, sub, topic)
			cancel()
			if ctx.Err() != nil {
				return
			}
			w.record(topic, sub, state, err)
		}
		w.mu.Lock()
		w.checked[topic] = true
		w.mu.Unlock()
	}
}

// record applies one subscription's check. An error other than a denied
// permission leaves the subscription's previous state: Pub/Sub not
// answering is the publishes' concern, not a detachment.
func (w *subscriptionWatch) record(topic, sub string, state gpubsub.Attachment, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if errclass.Of(err) == errclass.PermissionDenied && !w.denied[sub] {
			w.denied[sub] = true
			w.log.Warn("cannot check that a declared subscription is attached: permission pubsub.subscriptions.get denied (grant roles/pubsub.viewer on it); publishing to its topic is not held for it",
				"topic", topic, "subscription", sub, "error", err)
		}
		return
	}
	delete(w.denied, sub)
	p, wasBad := w.bad[sub]
	if state.Receives() {
		w.gauge.WithLabelValues(topic, sub).Set(0)
		if wasBad {
			delete(w.bad, sub)
			w.log.Info("declared subscription attached again: publishing to its topic resumes",
				"topic", topic, "subscription", sub, "held_for", time.Since(p.since).Round(time.Second).String())
		}
		return
	}
	w.gauge.WithLabelValues(topic, sub).Set(1)
	if wasBad && p.state == state {
		return
	}
	w.bad[sub] = subscriptionProblem{topic: topic, state: state, since: time.Now()}
	w.log.Error("a subscription declared for the topic receives nothing from it: publishing to the topic is held (relayctl pubsub ensure re-creates it)",
		"topic", topic, "subscription", sub, "state", string(state))
}

// held returns an environmental error while topic is held: a declared
// subscription of it is not attached, or it has not been checked yet.
func (w *subscriptionWatch) held(topic string) error {
	subs := w.declared[topic]
	if len(subs) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.checked[topic] {
		return errclass.Newf(errclass.SubscriptionNotFound, "publishing to topic %s waits for the first check of its subscriptions", topic)
	}
	var parts []string
	for _, sub := range subs {
		if p, ok := w.bad[sub]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", sub, p.state))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return errclass.Newf(errclass.SubscriptionNotFound, "publishing to topic %s is held: declared subscription(s) %s receive nothing from it (relayctl pubsub ensure)",
		topic, strings.Join(parts, ", "))
}

// retryIn is how long a row held for reason waits: a row refused by held
// (subscription_not_found) waits until the next check, others not at all.
func (w *subscriptionWatch) retryIn(reason errclass.Reason) time.Duration {
	if reason != errclass.SubscriptionNotFound {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Until(w.next)
}

// Check is the readiness check "subscriptions": it fails while a topic is
// held, naming each subscription, its state and since when.
func (w *subscriptionWatch) Check(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bad) == 0 {
		return nil
	}
	parts := make([]string, 0, len(w.bad))
	for sub, p := range w.bad {
		parts = append(parts, fmt.Sprintf("subscription %s of topic %s: %s for %s", sub, p.topic, p.state, time.Since(p.since).Round(time.Second)))
	}
	sort.Strings(parts)
	return errors.New("publishing held: " + strings.Join(parts, "; ") + " (relayctl pubsub ensure re-creates it)")
}

// checkSubscriptions validates PublishOptions.Subscriptions.
func (p PublishOptions) checkSubscriptions() error {
	for topic, subs := range p.Subscriptions {
		if strings.TrimSpace(topic) == "" {
			return optionErrorf("Publish.Subscriptions", "has an empty topic")
		}
		for _, s := range subs {
			if strings.TrimSpace(s) == "" {
				return optionErrorf("Publish.Subscriptions", "topic %q lists an empty subscription id", topic)
			}
		}
	}
	return nil
}
