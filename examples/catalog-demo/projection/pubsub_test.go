package projection_test

import (
	"context"
	"testing"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventrelay/eventrelay/relaytest"
)

// createTopic creates topic id on the test Pub/Sub, as the deployment does.
func createTopic(t testing.TB, ps *relaytest.PubSub, id string) {
	t.Helper()
	if _, err := ps.Client.TopicAdminClient.CreateTopic(context.Background(), &pb.Topic{Name: "projects/" + ps.ProjectID + "/topics/" + id}); err != nil {
		t.Fatalf("creating topic %s: %v", id, err)
	}
}

// createSubscription creates subscription id of topic on the test Pub/Sub,
// shaped by like (ordering, exactly-once delivery; nil: neither).
func createSubscription(t testing.TB, ps *relaytest.PubSub, id, topic string, like *pb.Subscription) {
	t.Helper()
	s := &pb.Subscription{Name: "projects/" + ps.ProjectID + "/subscriptions/" + id, Topic: "projects/" + ps.ProjectID + "/topics/" + topic,
		EnableMessageOrdering: like.GetEnableMessageOrdering(), EnableExactlyOnceDelivery: like.GetEnableExactlyOnceDelivery()}
	if _, err := ps.Client.SubscriptionAdminClient.CreateSubscription(context.Background(), s); err != nil {
		t.Fatalf("creating subscription %s: %v", id, err)
	}
}
