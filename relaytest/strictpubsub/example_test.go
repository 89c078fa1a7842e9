package strictpubsub_test

import (
	"context"
	"fmt"
	"log"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/status"

	"github.com/eventrelay/eventrelay/embedded"
	"github.com/eventrelay/eventrelay/relaytest/strictpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// A service's end-to-end test puts the double in front of the server it
// runs (here pstest; the emulator's host:port alike) and points its
// processes at the double's address.
func Example() {
	srv := pstest.NewServer()
	defer srv.Close()
	rtt, err := strictpubsub.RTTFromEnv() // e.g. PUBSUB_DOUBLE_RTT=15ms
	if err != nil {
		log.Fatal(err)
	}
	double, err := strictpubsub.Start(strictpubsub.Options{Upstream: srv.Addr, RTT: rtt})
	if err != nil {
		log.Fatal(err)
	}
	defer double.Close()

	ctx := context.Background()
	client, err := embedded.NewPubSubClient(ctx, settings.PubSub{ProjectID: "orders-test", EmulatorHost: double.Addr()})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	topic := "projects/orders-test/topics/orders"
	if _, err := client.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topic}); err != nil {
		log.Fatal(err)
	}

	// The client library sends one ordering key per request: accepted.
	p := client.Publisher(topic)
	p.EnableMessageOrdering = true
	if _, err := p.Publish(ctx, &pubsub.Message{Data: []byte("placed"), OrderingKey: "order-1"}).Get(ctx); err != nil {
		log.Fatal(err)
	}
	p.Stop()

	// A request mixing ordering keys: pstest accepts it, Cloud Pub/Sub
	// and the double refuse it.
	_, err = client.TopicAdminClient.Publish(ctx, &pb.PublishRequest{Topic: topic, Messages: []*pb.PubsubMessage{
		{Data: []byte("placed"), OrderingKey: "order-2"},
		{Data: []byte("placed"), OrderingKey: "order-3"},
	}})
	fmt.Println(status.Code(err))

	st := double.Stats()
	fmt.Printf("%d requests, %d refused (mixed_ordering_keys: %d), billable %d bytes\n",
		st.PublishRequests, st.Refused, st.ByRule["mixed_ordering_keys"], st.BillableBytes)
	// Output:
	// FailedPrecondition
	// 2 requests, 1 refused (mixed_ordering_keys: 1), billable 1000 bytes
}
