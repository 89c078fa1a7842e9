package command

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/contract"
	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// Attributes set on dead letters: by the projector (error_reason, error,
// projection, delivery_attempt, original_message_id, dead_lettered_at) and
// by Pub/Sub's own dead-letter policy (CloudPubSubDeadLetter*). They are
// removed when a message is republished to its main topic.
var deadLetterAttrs = contract.DeadLetterAttributes

const pubsubDeadLetterPrefix = "CloudPubSubDeadLetter"

// dlqMessage is one pulled dead letter.
type dlqMessage struct {
	MessageID   string            `json:"message_id"`
	PublishTime time.Time         `json:"publish_time"`
	OrderingKey string            `json:"ordering_key,omitempty"`
	Attributes  map[string]string `json:"attributes"`
	Reason      string            `json:"reason"`
	EventType   string            `json:"event_type,omitempty"`
	EventID     string            `json:"event_id,omitempty"`
	AggregateID string            `json:"aggregate_id,omitempty"`
	Version     string            `json:"version,omitempty"`
	Projection  string            `json:"projection,omitempty"`
	Error       string            `json:"error,omitempty"`
	Bytes       int               `json:"bytes"`

	data  []byte
	ackID string
}

func newDLQMessage(rm *pb.ReceivedMessage) dlqMessage {
	m := rm.GetMessage()
	a := m.GetAttributes()
	if a == nil {
		a = map[string]string{}
	}
	d := dlqMessage{
		MessageID: m.GetMessageId(), PublishTime: m.GetPublishTime().AsTime(), OrderingKey: m.GetOrderingKey(),
		Attributes: a, Reason: a[contract.AttrErrorReason], EventType: a["event_type"], EventID: a["event_id"],
		AggregateID: a["aggregate_id"], Version: a["version"], Projection: a["projection"], Error: a["error"],
		Bytes: len(m.GetData()), data: m.GetData(), ackID: rm.GetAckId(),
	}
	if d.Reason == "" {
		if _, ok := a[pubsubDeadLetterPrefix+"SourceDeliveryCount"]; ok {
			d.Reason = "max_delivery_attempts"
		} else {
			d.Reason = "unknown"
		}
	}
	return d
}

// republishAttributes are the original attributes: dead-letter ones removed.
func (d dlqMessage) republishAttributes() map[string]string {
	out := make(map[string]string, len(d.Attributes))
	for k, v := range d.Attributes {
		if !strings.HasPrefix(k, pubsubDeadLetterPrefix) {
			out[k] = v
		}
	}
	for _, k := range deadLetterAttrs {
		delete(out, k)
	}
	return out
}

// dlqFilter selects pulled messages.
type dlqFilter struct {
	Reason    string   `json:"reason,omitempty"`
	EventType string   `json:"event_type,omitempty"`
	IDs       []string `json:"ids,omitempty"`
	Limit     int      `json:"limit,omitempty"`
}

// match: ids match the DLQ message id, original_message_id or event_id.
func (f dlqFilter) match(d dlqMessage) bool {
	if f.Reason != "" && d.Reason != f.Reason {
		return false
	}
	if f.EventType != "" && d.EventType != f.EventType {
		return false
	}
	if len(f.IDs) == 0 {
		return true
	}
	for _, id := range f.IDs {
		if id == d.MessageID || id == d.Attributes[contract.AttrOriginalMessageID] || strings.EqualFold(id, d.EventID) {
			return true
		}
	}
	return false
}

// dlqScan holds the leases of the messages pulled from one subscription.
// Every message is either acked or released (ack deadline 0) by release.
type dlqScan struct {
	client *pubsub.Client
	sub    string // full name
	msgs   []dlqMessage
	done   map[string]bool // ack ids acked already
	full   bool            // stopped because max messages were pulled
}

// emptyPullsToStop is how many empty Pull answers in a row end a scan.
// Pull may answer empty at once while messages remain (Cloud Pub/Sub
// spreads a subscription's backlog over servers), so one empty answer is
// not "drained"; a Pull the server held open until our 3s timeout is.
const emptyPullsToStop = 3

// pullAll pulls up to max messages without acking them. Pub/Sub leases
// them for the subscription's ack deadline; nobody else receives them
// until release. The scan ends at max messages, after emptyPullsToStop
// empty answers in a row or one Pull that timed out, or as soon as every
// id in want was found.
func pullAll(ctx context.Context, client *pubsub.Client, project, subID string, max int, want []string) (*dlqScan, error) {
	s := &dlqScan{client: client, sub: gpubsub.SubscriptionName(project, subID), done: map[string]bool{}}
	empty := 0
	for len(s.msgs) < max && empty < emptyPullsToStop && !s.foundAll(want) {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := client.SubscriptionAdminClient.Pull(pctx, &pb.PullRequest{
			Subscription: s.sub, MaxMessages: int32(min(max-len(s.msgs), 1000)),
		})
		cancel()
		if errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
			break // the server held the Pull open for 3s and had nothing
		}
		if err != nil {
			s.release(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("pulling from %s: %w", subID, gpubsub.Target{Subscription: s.sub}.Classify(err))
		}
		if len(resp.GetReceivedMessages()) == 0 {
			empty++
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		empty = 0
		for _, rm := range resp.GetReceivedMessages() {
			s.msgs = append(s.msgs, newDLQMessage(rm))
		}
	}
	s.full = len(s.msgs) >= max
	sort.SliceStable(s.msgs, func(i, j int) bool { return s.msgs[i].PublishTime.Before(s.msgs[j].PublishTime) })
	return s, nil
}

// foundAll reports whether every id in want (message, original message
// or event id) is among the pulled messages; false when want is empty.
func (s *dlqScan) foundAll(want []string) bool {
	return len(want) > 0 && len(s.missing(want)) == 0
}

// missing lists the ids of want that match none of the pulled messages.
func (s *dlqScan) missing(want []string) []string {
	var out []string
	for _, id := range want {
		f := dlqFilter{IDs: []string{id}}
		if !slices.ContainsFunc(s.msgs, f.match) {
			out = append(out, id)
		}
	}
	return out
}

// missingErr is the problem (exit 1) of a command given --ids of which
// some were not pulled, nil when all were: an operator who names messages
// must learn that some were not acted on.
func (s *dlqScan) missingErr(want []string, max int) error {
	miss := s.missing(want)
	if len(miss) == 0 {
		return nil
	}
	return problemErr("%d of the %d --ids not found in %s (pulled %d): %s; a message another reader holds (a running dlq command, a subscriber) shows again after its ack deadline%s",
		len(miss), len(want), s.sub, len(s.msgs), strings.Join(miss, ","), s.note(max))
}

// note is what a report should add about the scan's reach: when it
// stopped at --scan, the subscription may hold more.
func (s *dlqScan) note(max int) string {
	if !s.full {
		return ""
	}
	return fmt.Sprintf(" (stopped at --scan %d: the subscription may hold more; run again or raise --scan)", max)
}

func (s *dlqScan) selected(f dlqFilter) []dlqMessage {
	var out []dlqMessage
	for _, m := range s.msgs {
		if f.match(m) && (f.Limit == 0 || len(out) < f.Limit) {
			out = append(out, m)
		}
	}
	return out
}

// ack acknowledges messages (they leave the DLQ for good).
func (s *dlqScan) ack(ctx context.Context, msgs []dlqMessage) error {
	ids := make([]string, 0, len(msgs))
	for _, m := range msgs {
		ids = append(ids, m.ackID)
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		err := s.client.SubscriptionAdminClient.Acknowledge(ctx, &pb.AcknowledgeRequest{Subscription: s.sub, AckIds: ids[:n]})
		if err != nil {
			return fmt.Errorf("acknowledging: %w", gpubsub.Target{Subscription: s.sub}.Classify(err))
		}
		for _, id := range ids[:n] {
			s.done[id] = true
		}
		ids = ids[n:]
	}
	return nil
}

// release hands every message not acked back to the subscription at once.
func (s *dlqScan) release(ctx context.Context) error {
	var ids []string
	for _, m := range s.msgs {
		if !s.done[m.ackID] {
			ids = append(ids, m.ackID)
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), 1000)
		err := s.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pb.ModifyAckDeadlineRequest{
			Subscription: s.sub, AckIds: ids[:n], AckDeadlineSeconds: 0,
		})
		if err != nil {
			return fmt.Errorf("releasing pulled messages (they return after the ack deadline): %w", gpubsub.Target{Subscription: s.sub}.Classify(err))
		}
		ids = ids[n:]
	}
	return nil
}
