package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/projector"
	"github.com/eventrelay/eventrelay/settings"
)

// OrderChecker is an independent ordered subscription on a topic that
// nobody else acks. For every aggregate it records the version of each
// event the first time that event is seen; those versions must strictly
// increase (a redelivery or a duplicate publish of an event already seen
// is counted, not judged). It recreates its subscription when the server
// lost it (emulator restart) and keeps receiving until stopped.
type OrderChecker struct {
	client *pubsub.Client
	cfg    settings.PubSub
	topic  string
	subID  string
	// Skip, when set, excludes messages from the order check (e.g. poison
	// injected by the harness); they are counted as Skipped.
	Skip func(*pubsub.Message) bool

	mu         sync.Mutex
	lastSeen   map[string]int64          // aggregate -> highest first-seen version
	messageIDs map[string]map[string]int // event_id -> message_id -> deliveries
	violations []string
	stats      OrderStats
	lastRecv   time.Time
	lastErr    error
	// held, when set, stops Run from receiving (see Suspend); cancel ends
	// the Receive in progress.
	held   chan struct{}
	cancel context.CancelFunc
}

// OrderStats are the checker's counts.
type OrderStats struct {
	Deliveries int64 // every delivery, redeliveries included
	Events     int64 // distinct event ids
	// DuplicatePublishes: extra message ids for an event id already seen
	// (the publisher published it again, e.g. after a crash before it
	// recorded the outcome).
	DuplicatePublishes int64
	// Redeliveries: the same message delivered again.
	Redeliveries int64
	Violations   int64
	Skipped      int64
	// MissingAttrs: messages without event_id/aggregate_id/version.
	MissingAttrs int64
	// Resubscribes: times the subscription had to be created again.
	Resubscribes int64
}

// NewOrderChecker prepares a checker of topic through subscription subID.
func NewOrderChecker(ctx context.Context, cfg settings.PubSub, topic, subID string) (*OrderChecker, error) {
	cl, err := embedded.NewPubSubClient(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &OrderChecker{client: cl, cfg: cfg, topic: topic, subID: subID,
		lastSeen: map[string]int64{}, messageIDs: map[string]map[string]int{}}, nil
}

// Ensure creates the ordered subscription if it does not exist. Call it
// after the topic exists and before the first publish.
func (c *OrderChecker) Ensure(ctx context.Context) error {
	return ensureOrderedSubscription(ctx, c.client, c.cfg.ProjectID, c.topic, c.subID)
}

// ensureOrderedSubscription creates an ordered subscription unless it
// exists. The suite's audit tap (AuditSubscription) is made this way: it
// belongs to the tests, not to configs/pubsub.yaml.
func ensureOrderedSubscription(ctx context.Context, client *pubsub.Client, project, topic, subID string) error {
	_, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{
		Name:                  subscriptionName(project, subID),
		Topic:                 topicName(project, topic),
		EnableMessageOrdering: true,
		AckDeadlineSeconds:    60,
	})
	if status.Code(err) == codes.AlreadyExists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating order-check subscription %s on %s: %w", subID, topic, err)
	}
	return nil
}

// Run receives until ctx ends, re-subscribing after errors.
func (c *OrderChecker) Run(ctx context.Context) {
	sub := c.client.Subscriber(c.subID)
	sub.ReceiveSettings.NumGoroutines = 4 // pstest delivers ~100 msgs/s per stream
	sub.ReceiveSettings.MaxOutstandingMessages = 5000
	// The server packs a response up to this; the client refuses one over
	// 20 MiB (the oversize messages of the suite would wedge it).
	sub.ReceiveSettings.MaxOutstandingBytes = projector.MaxOutstandingBytesLimit
	for ctx.Err() == nil {
		c.mu.Lock()
		held := c.held
		c.mu.Unlock()
		if held != nil {
			select {
			case <-ctx.Done():
				return
			case <-held:
			}
		}
		rctx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		if c.held != nil { // suspended meanwhile
			c.mu.Unlock()
			cancel()
			continue
		}
		c.cancel = cancel
		c.mu.Unlock()
		err := sub.Receive(rctx, c.handle)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if rctx.Err() != nil { // suspended
			continue
		}
		c.mu.Lock()
		c.lastErr = err
		c.mu.Unlock()
		if status.Code(errors.Unwrap(err)) == codes.NotFound || status.Code(err) == codes.NotFound {
			if c.Ensure(ctx) == nil {
				c.mu.Lock()
				c.stats.Resubscribes++
				c.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Suspend ends the Receive in progress and receives nothing until Resume.
//
// The harness suspends the checker across a Pub/Sub restart: a Receive
// that starts while its subscription is being recreated gets NotFound on
// some streams and cancels the others, and the emulator (0.8.20) never
// learns that a cancelled StreamingPull is gone. Messages it hands to such
// a dead stream come back only after their ack deadline, behind the later
// versions of their keys: the checker saw the first batch published after
// a restart as first-seen order violations although the outbox shows
// every key published in version order.
func (c *OrderChecker) Suspend() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = make(chan struct{})
	}
	if c.cancel != nil {
		c.cancel()
	}
}

// Resume lets a suspended checker receive again.
func (c *OrderChecker) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held != nil {
		close(c.held)
		c.held = nil
	}
}

func (c *OrderChecker) handle(_ context.Context, m *pubsub.Message) {
	m.Ack()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Deliveries++
	c.lastRecv = time.Now()
	if c.Skip != nil && c.Skip(m) {
		c.stats.Skipped++
		return
	}
	eventID := m.Attributes["event_id"]
	agg := m.Attributes["aggregate_type"] + "/" + m.Attributes["aggregate_id"]
	v, err := strconv.ParseInt(m.Attributes["version"], 10, 64)
	if eventID == "" || m.Attributes["aggregate_id"] == "" || err != nil {
		c.stats.MissingAttrs++
		return
	}
	ids := c.messageIDs[eventID]
	if ids != nil {
		if ids[m.ID] > 0 {
			c.stats.Redeliveries++
		} else {
			c.stats.DuplicatePublishes++
		}
		ids[m.ID]++
		return
	}
	c.messageIDs[eventID] = map[string]int{m.ID: 1}
	c.stats.Events++
	if prev, ok := c.lastSeen[agg]; ok && v <= prev {
		c.stats.Violations++
		if len(c.violations) < 20 {
			c.violations = append(c.violations, fmt.Sprintf("%s: version %d (event %s) first seen after version %d", agg, v, eventID, prev))
		}
		return
	}
	c.lastSeen[agg] = v
}

// Stats returns the counts so far.
func (c *OrderChecker) Stats() OrderStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Violations describes up to 20 order violations.
func (c *OrderChecker) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// LastReceive is when the last message arrived.
func (c *OrderChecker) LastReceive() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastRecv
}

// Close releases the client.
func (c *OrderChecker) Close() error { return c.client.Close() }

// topicName and subscriptionName are the resource names of ids in project.
func topicName(project, id string) string { return "projects/" + project + "/topics/" + id }

func subscriptionName(project, id string) string {
	return "projects/" + project + "/subscriptions/" + id
}
