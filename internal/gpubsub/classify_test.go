package gpubsub

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want errclass.Reason
	}{
		{status.Error(codes.Unavailable, "x"), errclass.Unavailable},
		{status.Error(codes.DeadlineExceeded, "x"), errclass.Timeout},
		{status.Error(codes.ResourceExhausted, "x"), errclass.RateLimited},
		{status.Error(codes.Internal, "x"), errclass.ServerError},
		{status.Error(codes.InvalidArgument, "x"), errclass.PayloadInvalid},
		{status.Error(codes.NotFound, "x"), errclass.TopicNotFound},
		{status.Error(codes.AlreadyExists, "x"), errclass.AlreadyExists},
		{status.Error(codes.PermissionDenied, "x"), errclass.PermissionDenied},
		{fmt.Errorf("publishing: %w", pubsub.ErrOversizedMessage), errclass.MessageTooLarge},
		{context.DeadlineExceeded, errclass.Timeout},
	}
	for _, c := range cases {
		got := errclass.Of(Classify(c.err))
		if got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if Classify(nil) != nil {
		t.Fatal("nil must stay nil")
	}
}

// The answers of the strict double (Cloud Pub/Sub's texts) are told apart:
// a request the relay built wrongly is request_invalid (a defect, loud),
// never payload_invalid (which would fail the event terminally), and a
// FAILED_PRECONDITION about a resource is an operator's to fix.
func TestClassifyServiceRefusals(t *testing.T) {
	msg := func(key string) *pb.PubsubMessage { return &pb.PubsubMessage{Data: []byte("x"), OrderingKey: key} }
	many := make([]*pb.PubsubMessage, 1001)
	for i := range many {
		many[i] = msg("k")
	}
	cases := []struct {
		name string
		msgs []*pb.PubsubMessage
		want errclass.Reason
	}{
		{"mixed ordering keys", []*pb.PubsubMessage{msg("a"), msg("b")}, errclass.RequestInvalid},
		{"too many messages", many, errclass.RequestInvalid},
		{"request too large", []*pb.PubsubMessage{{Data: make([]byte, 6e6)}, {Data: make([]byte, 6e6)}}, errclass.RequestInvalid},
		{"no messages", nil, errclass.RequestInvalid},
		{"empty message", []*pb.PubsubMessage{{OrderingKey: "k"}}, errclass.PayloadInvalid},
		{"attribute value too long", []*pb.PubsubMessage{{Data: []byte("x"), Attributes: map[string]string{"k": string(make([]byte, 1025))}}}, errclass.PayloadInvalid},
	}
	for _, c := range cases {
		r := strict.CheckPublish(&pb.PublishRequest{Topic: "projects/p/topics/t", Messages: c.msgs})
		if r == nil {
			t.Fatalf("%s: the double accepted it", c.name)
		}
		if got := errclass.Of(Classify(r.Err)); got != c.want {
			t.Errorf("%s: Classify(%v) = %s, want %s", c.name, r.Err, got, c.want)
		}
	}
	kms := status.Error(codes.FailedPrecondition, "Cloud Pub/Sub did not have the necessary permissions configured to support this operation.")
	if got := errclass.Of(Classify(kms)); got != errclass.PreconditionFailed || !got.Transient() || got.Defect() {
		t.Errorf("resource precondition: %s", got)
	}
	if !errclass.RequestInvalid.Transient() || !errclass.RequestInvalid.Defect() {
		t.Error("request_invalid must be retried (not the event's fault) and reported as a defect")
	}
}

// A NOT_FOUND names the missing kind, from the texts each server really
// answers (Cloud Pub/Sub's from its documented errors, the emulator's
// recorded from gcloud's emulator, pstest's from its source) and, where
// Cloud Pub/Sub names only an id, from the resources the call addressed.
func TestClassifyNotFoundKinds(t *testing.T) {
	const p = "projects/p/"
	sub := Target{Subscription: p + "subscriptions/orders-pg"}
	seek := Target{Subscription: p + "subscriptions/orders-pg", Snapshot: p + "snapshots/before-deploy"}
	newSub := Target{Subscription: "orders-pg", Topic: "orders"}
	cases := []struct {
		name   string
		target Target
		msg    string
		want   errclass.Reason
	}{
		{"cloud publish", Target{}, "Resource not found (resource=orders).", errclass.TopicNotFound},
		{"cloud pull", sub, "Resource not found (resource=orders-pg).", errclass.SubscriptionNotFound},
		{"cloud streaming pull, full name", sub, "Resource not found (resource=projects/p/subscriptions/orders-pg).", errclass.SubscriptionNotFound},
		{"cloud seek, missing snapshot", seek, "Resource not found (resource=before-deploy).", errclass.SnapshotNotFound},
		{"cloud seek, missing subscription", seek, "Resource not found (resource=orders-pg).", errclass.SubscriptionNotFound},
		{"cloud create subscription, missing topic", newSub, "Resource not found (resource=orders).", errclass.TopicNotFound},
		{"emulator publish", Target{}, "Topic not found", errclass.TopicNotFound},
		{"emulator pull", Target{}, "Subscription does not exist", errclass.SubscriptionNotFound},
		{"emulator receive", sub, "Subscription does not exist (resource=nope)", errclass.SubscriptionNotFound},
		{"emulator create subscription, missing topic", newSub, "Subscription topic does not exist", errclass.TopicNotFound},
		{"emulator seek, missing snapshot", seek, "Snapshot does not exist", errclass.SnapshotNotFound},
		{"emulator seek, missing subscription", seek, "Subscription does not exist", errclass.SubscriptionNotFound},
		{"pstest topic", sub, `topic "projects/p/topics/orders"`, errclass.TopicNotFound},
		{"pstest subscription", Target{}, "subscription projects/p/subscriptions/orders-pg", errclass.SubscriptionNotFound},
		{"pstest dead-letter topic", sub, `deadLetter topic "projects/p/topics/orders.dlq"`, errclass.TopicNotFound},
	}
	for _, c := range cases {
		got := errclass.Of(c.target.Classify(status.Error(codes.NotFound, c.msg)))
		if got != c.want {
			t.Errorf("%s: %q -> %s, want %s", c.name, c.msg, got, c.want)
		}
		if got.Transient() {
			t.Errorf("%s: %s is transient; retrying the same call cannot find the resource", c.name, got)
		}
	}
	for _, msg := range []string{"Resource already exists in the project (resource=before-deploy).", "Snapshot already exists"} {
		got := errclass.Of(seek.Classify(status.Error(codes.AlreadyExists, msg)))
		if got != errclass.AlreadyExists || got.Transient() {
			t.Errorf("%q -> %s, want deterministic already_exists", msg, got)
		}
	}
}
