package gpubsub

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
)

// Actions of a Change.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	// Conflict: the resource differs in an immutable field (a subscription's
	// topic or message ordering). Ensure leaves it alone; an operator must
	// delete and recreate it (which drops its backlog).
	Conflict = "conflict"
)

// Change reports what Ensure did (or, with dryRun, would do) to one resource.
type Change struct {
	Kind   string   `json:"kind"` // "topic" or "subscription"
	Name   string   `json:"name"`
	Action string   `json:"action"`
	Diffs  []string `json:"diffs,omitempty"` // "field: have -> want"
}

// Ensure makes the project's resources match r: it creates missing topics
// (first) and subscriptions, updates the mutable fields of existing ones and
// reports immutable differences as conflicts. It is idempotent: a second
// run reports every resource unchanged. With dryRun it changes nothing and
// reports what it would do. It stops at the first API error, returning the
// changes made so far.
func Ensure(ctx context.Context, client *pubsub.Client, project string, r Resources, dryRun bool) ([]Change, error) {
	return EnsureWith(ctx, client, project, r, EnsureOptions{DryRun: dryRun})
}

// EnsureWith is Ensure with options: o.RecreateDetached also re-creates
// detached subscriptions (see Recreated).
func EnsureWith(ctx context.Context, client *pubsub.Client, project string, r Resources, o EnsureOptions) ([]Change, error) {
	dryRun := o.DryRun
	var out []Change
	for _, t := range r.Topics {
		ch, err := ensureTopic(ctx, client, project, t, dryRun)
		if err != nil {
			return out, fmt.Errorf("topic %s: %w", t.Name, Classify(err))
		}
		out = append(out, ch)
	}
	for _, s := range r.Subscriptions {
		ch, err := ensureSubscription(ctx, client, project, s, o)
		if err != nil {
			t := Target{Subscription: SubscriptionName(project, s.Name), Topic: TopicName(project, s.Topic)}
			return out, fmt.Errorf("subscription %s: %w", s.Name, t.Classify(err))
		}
		out = append(out, ch)
	}
	return out, nil
}

func ensureTopic(ctx context.Context, client *pubsub.Client, project string, t TopicSpec, dryRun bool) (Change, error) {
	ch := Change{Kind: "topic", Name: t.Name}
	want := &pb.Topic{Name: TopicName(project, t.Name)}
	if t.Retention > 0 {
		want.MessageRetentionDuration = durationpb.New(t.Retention)
	}
	have, err := client.TopicAdminClient.GetTopic(ctx, &pb.GetTopicRequest{Topic: want.Name})
	if status.Code(err) == codes.NotFound {
		ch.Action = Created
		if dryRun {
			return ch, nil
		}
		_, err = client.TopicAdminClient.CreateTopic(ctx, want)
		if status.Code(err) == codes.AlreadyExists { // a concurrent ensure won
			ch.Action = Unchanged
			err = nil
		}
		return ch, err
	}
	if err != nil {
		return ch, err
	}
	if d := durationOf(have.GetMessageRetentionDuration()); d != t.Retention {
		ch.Diffs = append(ch.Diffs, fmt.Sprintf("message_retention_duration: %s -> %s", d, t.Retention))
	}
	if len(ch.Diffs) == 0 {
		ch.Action = Unchanged
		return ch, nil
	}
	ch.Action = Updated
	if dryRun {
		return ch, nil
	}
	_, err = client.TopicAdminClient.UpdateTopic(ctx, &pb.UpdateTopicRequest{
		Topic:      want,
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"message_retention_duration"}},
	})
	return ch, err
}

// SubscriptionProto is the subscription s describes.
func SubscriptionProto(project string, s SubscriptionSpec) *pb.Subscription {
	sub := &pb.Subscription{
		Name:                      SubscriptionName(project, s.Name),
		Topic:                     TopicName(project, s.Topic),
		EnableMessageOrdering:     s.Ordered,
		AckDeadlineSeconds:        int32(s.AckDeadline / time.Second),
		MessageRetentionDuration:  durationpb.New(s.Retention),
		RetainAckedMessages:       s.RetainAcked,
		EnableExactlyOnceDelivery: s.ExactlyOnce,
		// No TTL: the subscription never expires. Pub/Sub's default
		// deletes a subscription idle for 31 days, and a dead-letter
		// topic without a subscription drops what it receives.
		ExpirationPolicy: &pb.ExpirationPolicy{},
	}
	if s.Retry != nil {
		sub.RetryPolicy = &pb.RetryPolicy{
			MinimumBackoff: durationpb.New(s.Retry.MinBackoff),
			MaximumBackoff: durationpb.New(s.Retry.MaxBackoff),
		}
	}
	if s.DeadLetter != nil {
		sub.DeadLetterPolicy = &pb.DeadLetterPolicy{
			DeadLetterTopic:     TopicName(project, s.DeadLetter.Topic),
			MaxDeliveryAttempts: s.DeadLetter.MaxDeliveryAttempts,
		}
	}
	return sub
}

func ensureSubscription(ctx context.Context, client *pubsub.Client, project string, s SubscriptionSpec, o EnsureOptions) (Change, error) {
	dryRun := o.DryRun
	ch := Change{Kind: "subscription", Name: s.Name}
	want := SubscriptionProto(project, s)
	have, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pb.GetSubscriptionRequest{Subscription: want.Name})
	if status.Code(err) == codes.NotFound {
		ch.Action = Created
		if dryRun {
			return ch, nil
		}
		_, err = client.SubscriptionAdminClient.CreateSubscription(ctx, want)
		if status.Code(err) == codes.AlreadyExists {
			ch.Action = Unchanged
			err = nil
		}
		return ch, err
	}
	if err != nil {
		return ch, err
	}
	if AttachmentOf(have, want.Topic) == Detached {
		return recreateDetached(ctx, client, have, want, o)
	}
	var immutable []string
	if have.GetTopic() != want.Topic {
		immutable = append(immutable, fmt.Sprintf("topic: %s -> %s", have.GetTopic(), want.Topic))
	}
	if have.GetEnableMessageOrdering() != want.EnableMessageOrdering {
		immutable = append(immutable, fmt.Sprintf("enable_message_ordering: %t -> %t", have.GetEnableMessageOrdering(), want.EnableMessageOrdering))
	}
	paths, diffs := subscriptionDiff(have, want)
	ch.Diffs = append(immutable, diffs...)
	switch {
	case len(immutable) > 0:
		ch.Action = Conflict
		return ch, nil
	case len(paths) == 0:
		ch.Action = Unchanged
		return ch, nil
	}
	ch.Action = Updated
	if dryRun {
		return ch, nil
	}
	_, err = client.SubscriptionAdminClient.UpdateSubscription(ctx, &pb.UpdateSubscriptionRequest{
		Subscription: want,
		UpdateMask:   &fieldmaskpb.FieldMask{Paths: paths},
	})
	return ch, err
}

// subscriptionDiff compares the mutable fields Ensure manages.
func subscriptionDiff(have, want *pb.Subscription) (paths, diffs []string) {
	add := func(path, h, w string) {
		if h != w {
			paths = append(paths, path)
			diffs = append(diffs, fmt.Sprintf("%s: %s -> %s", path, h, w))
		}
	}
	add("ack_deadline_seconds", fmt.Sprint(have.GetAckDeadlineSeconds()), fmt.Sprint(want.GetAckDeadlineSeconds()))
	add("message_retention_duration", durationOf(have.GetMessageRetentionDuration()).String(), durationOf(want.GetMessageRetentionDuration()).String())
	add("retain_acked_messages", fmt.Sprint(have.GetRetainAckedMessages()), fmt.Sprint(want.GetRetainAckedMessages()))
	add("enable_exactly_once_delivery", fmt.Sprint(have.GetEnableExactlyOnceDelivery()), fmt.Sprint(want.GetEnableExactlyOnceDelivery()))
	add("retry_policy", retryString(have.GetRetryPolicy()), retryString(want.GetRetryPolicy()))
	add("dead_letter_policy", DeadLetterString(have.GetDeadLetterPolicy()), DeadLetterString(want.GetDeadLetterPolicy()))
	add("expiration_policy", expirationString(have.GetExpirationPolicy()), expirationString(want.GetExpirationPolicy()))
	return paths, diffs
}

// expirationString describes an expiration policy: absent is Pub/Sub's
// default (31 days idle), a policy without a TTL never expires.
func expirationString(e *pb.ExpirationPolicy) string {
	switch {
	case e == nil:
		return "default (31 days idle)"
	case e.GetTtl() == nil:
		return "never"
	}
	return "after " + durationOf(e.GetTtl()).String() + " idle"
}

func retryString(r *pb.RetryPolicy) string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("backoff %s..%s", durationOf(r.GetMinimumBackoff()), durationOf(r.GetMaximumBackoff()))
}

// DeadLetterString describes a dead-letter policy ("none", or "<topic id> after N attempts").
func DeadLetterString(d *pb.DeadLetterPolicy) string {
	if d == nil || d.GetDeadLetterTopic() == "" {
		return "none"
	}
	return fmt.Sprintf("%s after %d attempts", d.GetDeadLetterTopic()[strings.LastIndex(d.GetDeadLetterTopic(), "/")+1:], d.GetMaxDeliveryAttempts())
}

func durationOf(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}
