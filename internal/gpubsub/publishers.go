package gpubsub

import (
	"context"
	"sync"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventrelay/eventrelay/contract"
)

// Publishers hands out one message-ordering publisher of the client
// library per topic, created on first use with shared settings.
//
// The library keeps Cloud Pub/Sub's contract that every Publish request
// carries one ordering key ("All PubsubMessages published in a given
// PublishRequest must specify the same ordering_key value"): it bundles
// per key, keeps one request in flight per key and sends the requests of
// different keys concurrently, on up to settings.NumGoroutines goroutines
// per topic. A hand-written publisher that shared requests across keys was
// measured faster on the emulator and pstest, which accept mixed requests;
// Cloud Pub/Sub refuses them (see internal/gpubsub/strict).
//
// Contract: for one (topic, ordering key), messages reach Pub/Sub in the
// order of the Publish calls. After a failed publish the library pauses
// the key and fails every later message of it; the caller must call
// ResumePublish once it has collected those results. A hot key never
// stalls the others: each key has its own queue. Safe for concurrent use.
type Publishers struct {
	client   *pubsub.Client
	settings pubsub.PublishSettings

	mu       sync.Mutex
	byTopic  map[string]*pubsub.Publisher
	stopped  bool
	flushing sync.WaitGroup // Flush calls in progress; Stop waits for them
}

// NewPublishers returns Publishers on client with the given settings
// (start from pubsub.DefaultPublishSettings).
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

// Flush starts sending every buffered message now, without waiting for
// the bundling delay (PublishSettings.DelayThreshold), and returns at
// once; each message's PublishResult reports its outcome as before. The
// order of each ordering key is kept: the library sends a key's bundles
// one at a time, in order.
func (p *Publishers) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	for _, pub := range p.byTopic {
		p.flushing.Add(1)
		go func() {
			defer p.flushing.Done()
			pub.Flush() // blocks until the bundles it sent are handled
		}()
	}
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
	p.flushing.Wait() // the library's Flush must not race its Stop
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
	return contract.MessageSize(msg.Data, msg.Attributes, msg.OrderingKey)
}
