package gpubsub

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/proto"

	"github.com/eventrelay/eventrelay/internal/errclass"
)

// Publish request limits of Pub/Sub.
const (
	maxRequestMessages = 1000
	maxRequestBytes    = 9 << 20 // 10 MB, minus room for the request's own fields
)

// ErrKeyPaused is the error of a message whose ordering key is paused: an
// earlier message of the key failed, and later ones are refused until
// Resume, so that none overtakes it.
var ErrKeyPaused = errors.New("ordering key paused by an earlier failure")

// ErrPublisherStopped is the error of a message published after Stop.
var ErrPublisherStopped = errors.New("publisher stopped")

// OrderedPublisherSettings shape the Publish requests.
type OrderedPublisherSettings struct {
	// MaxMessages is the most messages per request (1..1000).
	MaxMessages int
	// Linger is how long the first request after an idle period waits for
	// more messages (0: send at once). Later requests need none: they
	// carry what was queued while the previous one was in flight.
	Linger time.Duration
	// Timeout bounds one request, its retries included.
	Timeout time.Duration
}

// OrderedPublisher publishes messages of many ordering keys in shared
// Publish requests: per topic, one request is in flight at a time and the
// next one carries everything queued meanwhile, so a claim batch spread
// over thousands of keys costs a few requests, not one per key (the
// client library's Publisher bundles per ordering key).
//
// Contract, as the library's: for one (topic, ordering key), messages reach
// Pub/Sub in the order of the Publish calls (requests are sequential per
// topic; within a request Pub/Sub keeps the order of the messages of a
// key). When a request fails, every key in it is paused: its later
// messages fail with ErrKeyPaused until Resume. A failed request with
// several keys (one invalid message, or one key over its throughput limit,
// fails the whole request) is sent again key by key, concurrently, so only
// the keys at fault fail. Safe for concurrent use.
type OrderedPublisher struct {
	client   *pubsub.Client
	project  string
	settings OrderedPublisherSettings

	mu      sync.Mutex
	topics  map[string]*topicQueue
	stopped bool
	senders sync.WaitGroup
}

// NewOrderedPublisher returns a publisher on client for project.
func NewOrderedPublisher(client *pubsub.Client, project string, s OrderedPublisherSettings) *OrderedPublisher {
	if s.MaxMessages < 1 || s.MaxMessages > maxRequestMessages {
		s.MaxMessages = maxRequestMessages
	}
	if s.Timeout <= 0 {
		s.Timeout = time.Minute
	}
	return &OrderedPublisher{client: client, project: project, settings: s, topics: map[string]*topicQueue{}}
}

// PublishResult is the outcome of one message.
type PublishResult struct {
	done chan struct{}
	id   string
	err  error
}

// Ready is closed when the outcome is known.
func (r *PublishResult) Ready() <-chan struct{} { return r.done }

// Get waits for the outcome: the server's message id, or the error
// (classified, ErrKeyPaused or ErrPublisherStopped).
func (r *PublishResult) Get(ctx context.Context) (string, error) {
	select {
	case <-r.done:
		return r.id, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func (r *PublishResult) set(id string, err error) {
	r.id, r.err = id, err
	close(r.done)
}

type queued struct {
	msg  *pb.PubsubMessage
	size int
	res  *PublishResult
}

type topicQueue struct {
	name    string // full topic name
	pending []queued
	paused  map[string]bool
	sending bool
}

// Publish queues msg for topic (an id or a full name) and returns at once.
func (p *OrderedPublisher) Publish(topic string, msg *pubsub.Message) *PublishResult {
	res := &PublishResult{done: make(chan struct{})}
	m := &pb.PubsubMessage{Data: msg.Data, Attributes: msg.Attributes, OrderingKey: msg.OrderingKey}
	size := proto.Size(m) // outside the lock every caller and sender share
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		res.set("", ErrPublisherStopped)
		return res
	}
	q := p.topics[topic]
	if q == nil {
		q = &topicQueue{name: TopicName(p.project, topic), paused: map[string]bool{}}
		p.topics[topic] = q
	}
	if q.paused[m.OrderingKey] {
		res.set("", ErrKeyPaused)
		return res
	}
	q.pending = append(q.pending, queued{msg: m, size: size, res: res})
	if !q.sending {
		q.sending = true
		p.senders.Add(1)
		go p.send(q)
	}
	return res
}

// Resume lets orderingKey publish on topic again after a failure.
func (p *OrderedPublisher) Resume(topic, orderingKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if q := p.topics[topic]; q != nil {
		delete(q.paused, orderingKey)
	}
}

// Stop waits until every queued message is sent (or failed); later
// Publish calls fail with ErrPublisherStopped.
func (p *OrderedPublisher) Stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.senders.Wait()
}

// send sends q's queue, one request at a time, until it is empty.
func (p *OrderedPublisher) send(q *topicQueue) {
	defer p.senders.Done()
	if p.settings.Linger > 0 {
		time.Sleep(p.settings.Linger)
	}
	for {
		batch := p.take(q)
		if batch == nil {
			return
		}
		if unsettled := p.request(q, batch); unsettled {
			// One key may have failed the whole request (an invalid
			// message, a key over its throughput limit): send each key's
			// messages alone, concurrently, as the library's per-key
			// bundles would, so only the keys at fault fail.
			var wg sync.WaitGroup
			for _, group := range byKey(batch) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p.request(q, group) // one key: always settled
				}()
			}
			wg.Wait()
		}
	}
}

// request sends batch as one Publish request and settles its results; on
// failure every key in it is paused. It settles nothing and reports
// unsettled when a request of several keys failed in a way one key may
// have caused: the caller sends it again key by key.
func (p *OrderedPublisher) request(q *topicQueue, batch []queued) (unsettled bool) {
	msgs := make([]*pb.PubsubMessage, len(batch))
	for i, b := range batch {
		msgs[i] = b.msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.settings.Timeout)
	resp, err := p.client.TopicAdminClient.Publish(ctx, &pb.PublishRequest{Topic: q.name, Messages: msgs})
	cancel()
	if err == nil && len(resp.GetMessageIds()) != len(batch) {
		err = errclass.New(errclass.ServerError, fmt.Errorf("publish answered %d message ids for %d messages", len(resp.GetMessageIds()), len(batch)))
	}
	if err != nil {
		err = fmt.Errorf("publishing %d messages to %s: %w", len(batch), q.name, Classify(err))
		if splittable(err) && len(byKey(batch)) > 1 {
			return true
		}
		p.mu.Lock()
		for _, b := range batch {
			q.paused[b.msg.OrderingKey] = true
		}
		p.mu.Unlock()
		for _, b := range batch {
			b.res.set("", err)
		}
		return false
	}
	for i, b := range batch {
		b.res.set(resp.GetMessageIds()[i], nil)
	}
	return false
}

// splittable: a failure that may concern single keys or messages, not the
// whole topic (missing, or not ours to publish to). A service-wide outage
// is split too, since it cannot be told apart from a key's own throttling:
// failing then takes up to two publish timeouts instead of one.
func splittable(err error) bool {
	switch errclass.Of(err) {
	case errclass.TopicNotFound, errclass.PermissionDenied:
		return false
	}
	return true
}

// byKey splits batch by ordering key, keeping each key's order.
func byKey(batch []queued) [][]queued {
	index := map[string]int{}
	var groups [][]queued
	for _, b := range batch {
		i, ok := index[b.msg.OrderingKey]
		if !ok {
			i = len(groups)
			index[b.msg.OrderingKey] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], b)
	}
	return groups
}

// take removes the next request's messages from q; messages of keys paused
// meanwhile fail at once. It returns nil, and marks q idle, when nothing is
// left.
func (p *OrderedPublisher) take(q *topicQueue) []queued {
	p.mu.Lock()
	defer p.mu.Unlock()
	var batch, refused []queued
	bytes, n := 0, 0
	for n < len(q.pending) && len(batch) < p.settings.MaxMessages {
		m := q.pending[n]
		if q.paused[m.msg.OrderingKey] {
			refused = append(refused, m)
			n++
			continue
		}
		if len(batch) > 0 && bytes+m.size > maxRequestBytes {
			break
		}
		batch = append(batch, m)
		bytes += m.size
		n++
	}
	q.pending = q.pending[n:]
	for _, m := range refused {
		m.res.set("", ErrKeyPaused)
	}
	if len(batch) == 0 {
		q.sending = false
		return nil
	}
	return batch
}

// MessageSize is the encoded size of msg as Pub/Sub counts it against the
// 10 MB limit (data, attributes and ordering key).
func MessageSize(msg *pubsub.Message) int {
	return proto.Size(&pb.PubsubMessage{Data: msg.Data, Attributes: msg.Attributes, OrderingKey: msg.OrderingKey})
}
