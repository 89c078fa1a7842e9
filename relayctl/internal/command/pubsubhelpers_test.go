package command

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/internal/gpubsub/gpubsubtest"
)

func subReq(id string) *pb.GetSubscriptionRequest {
	return &pb.GetSubscriptionRequest{Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, id)}
}

func updateAckDeadline(sub *pb.Subscription) *pb.UpdateSubscriptionRequest {
	return &pb.UpdateSubscriptionRequest{Subscription: sub, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"ack_deadline_seconds"}}}
}

func updateExpiration(sub *pb.Subscription, ttl time.Duration) *pb.UpdateSubscriptionRequest {
	sub.ExpirationPolicy = &pb.ExpirationPolicy{Ttl: durationpb.New(ttl)}
	return &pb.UpdateSubscriptionRequest{Subscription: sub, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"expiration_policy"}}}
}

func deleteSub(t *testing.T, ps *gpubsubtest.Server, id string) {
	t.Helper()
	err := ps.Client.SubscriptionAdminClient.DeleteSubscription(t.Context(), &pb.DeleteSubscriptionRequest{Subscription: gpubsub.SubscriptionName(gpubsubtest.Project, id)})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
