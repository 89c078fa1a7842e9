package gpubsub

import (
	"context"
	"fmt"
	"testing"

	"cloud.google.com/go/pubsub/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/internal/errclass"
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
