package publish

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
)

// maxProbed bounds the topics one readiness check gets (each a GetTopic
// within the check's budget).
const maxProbed = 8

// topicSet is the topics published to since the start, the first
// maxProbed of them.
type topicSet struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

func (t *topicSet) add(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.seen[topic]; ok || len(t.seen) >= maxProbed {
		return
	}
	if t.seen == nil {
		t.seen = map[string]struct{}{}
	}
	t.seen[topic] = struct{}{}
}

// probedTopics are the topics Ping checks: Settings.ReadyTopic when set,
// else the routed topics and those published to, sorted, at most
// maxProbed. Listing the project's topics instead would need
// pubsub.topics.list on the project, which a publisher granted roles on
// its topics alone lacks.
func (s *Publisher) probedTopics() []string {
	if s.probe != "" {
		return []string{s.probe}
	}
	s.topics.mu.Lock()
	set := maps.Clone(s.topics.seen)
	s.topics.mu.Unlock()
	if set == nil {
		set = map[string]struct{}{}
	}
	for _, t := range s.routes {
		set[t] = struct{}{}
	}
	topics := slices.Sorted(maps.Keys(set))
	return topics[:min(len(topics), maxProbed)]
}

// Ping checks that Pub/Sub answers for the topics this publisher
// publishes to (probedTopics): GetTopic on each, which needs
// pubsub.topics.get on the topic and proves it exists. With no topic
// known yet (no ReadyTopic, no routes, nothing published) there is
// nothing to check.
func (s *Publisher) Ping(ctx context.Context) error {
	for _, t := range s.probedTopics() {
		if err := gpubsub.Probe(ctx, s.client, s.project, t); err != nil {
			return err
		}
	}
	return nil
}
