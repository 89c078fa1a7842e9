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
