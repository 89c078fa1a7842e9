package gpubsub

import (
	"context"
	"fmt"
	"sync"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
)

// Publishers hands out one message-ordering publisher per topic, created on
// first use with shared settings, so a daemon that routes rows to many
// topics keeps one bundler (and one ordering pipeline per key) per topic.
//
// Contract: for one (topic, ordering key), messages reach Pub/Sub in the
// order of the Publish calls. After a failed publish the client pauses the
// key and fails every later message of it; the caller must call
// ResumePublish once it has collected those results. Safe for concurrent
// use.
type Publishers struct {
	client   *pubsub.Client
	settings pubsub.PublishSettings

	mu      sync.Mutex
	byTopic map[string]*pubsub.Publisher
	stopped bool
}

// NewPublishers returns Publishers on client with the given bundling
// settings (start from pubsub.DefaultPublishSettings).
func NewPublishers(client *pubsub.Client, settings pubsub.PublishSettings) *Publishers {
	return &Publishers{client: client, settings: settings, byTopic: map[string]*pubsub.Publisher{}}
}

func (p *Publishers) publisher(topic string) *pubsub.Publisher {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub := p.byTopic[topic]
	if pub == nil {
		pub = p.client.Publisher(topic)
		pub.PublishSettings = p.settings
		pub.EnableMessageOrdering = true
		p.byTopic[topic] = pub
		if p.stopped {
			pub.Stop() // every Publish fails with pubsub.ErrPublisherStopped
		}
	}
	return pub
}

// Publish sends msg to topic (an id or a full name) asynchronously.
func (p *Publishers) Publish(ctx context.Context, topic string, msg *pubsub.Message) *pubsub.PublishResult {
	return p.publisher(topic).Publish(ctx, msg)
}

// ResumePublish lets orderingKey publish again on topic after an error.
func (p *Publishers) ResumePublish(topic, orderingKey string) {
	p.publisher(topic).ResumePublish(orderingKey)
}

// Stop flushes and stops every publisher; later Publish calls fail.
func (p *Publishers) Stop() {
	p.mu.Lock()
	p.stopped = true
	pubs := make([]*pubsub.Publisher, 0, len(p.byTopic))
	for _, pub := range p.byTopic {
		pubs = append(pubs, pub)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, pub := range pubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pub.Stop()
		}()
	}
	wg.Wait()
}

// MessageSize is the encoded size of msg as Pub/Sub counts it against the
// 10 MB limit (data, attributes and ordering key).
func MessageSize(msg *pubsub.Message) int {
	return proto.Size(&pb.PubsubMessage{Data: msg.Data, Attributes: msg.Attributes, OrderingKey: msg.OrderingKey})
}

// Probe checks that Pub/Sub answers: GetTopic on topic when set (which
// also proves the topic exists), else one page of ListTopics. Errors are
// classified.
func Probe(ctx context.Context, client *pubsub.Client, project, topic string) error {
	if topic != "" {
		_, err := client.TopicAdminClient.GetTopic(ctx, &pb.GetTopicRequest{Topic: TopicName(project, topic)})
		if err != nil {
			return fmt.Errorf("getting topic %s: %w", topic, Classify(err))
		}
		return nil
	}
	it := client.TopicAdminClient.ListTopics(ctx, &pb.ListTopicsRequest{Project: "projects/" + project, PageSize: 1})
	if _, err := it.Next(); err != nil && err != iterator.Done {
		return fmt.Errorf("listing topics: %w", Classify(err))
	}
	return nil
}
