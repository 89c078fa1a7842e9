package relay

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/eventrelay/eventrelay/internal/errclass"
	"github.com/eventrelay/eventrelay/relay/internal/backoff"
)

// topicBlocks are the topics publishing is paused on for an environmental
// cause (errclass.Reason.Environmental: the topic is missing, permission
// is denied). A blocked topic's claimed rows are rescheduled to the end of
// the block without reaching Pub/Sub; the first row claimed after it is
// the probe: its success clears the block, its failure extends it with
// backoff. Rows never fail for an environmental cause.
type topicBlocks struct {
	policy backoff.Policy
	gauge  *prometheus.GaugeVec

	mu sync.Mutex
	by map[string]*topicBlock
}

type topicBlock struct {
	reason   errclass.Reason
	err      string
	since    time.Time
	until    time.Time
	failures int32
}

func newTopicBlocks(policy backoff.Policy, gauge *prometheus.GaugeVec) *topicBlocks {
	return &topicBlocks{policy: policy, gauge: gauge, by: map[string]*topicBlock{}}
}

// failed records an environmental failure of a publish to topic and
// returns how long the topic stays blocked.
func (b *topicBlocks) failed(topic string, reason errclass.Reason, err string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	k := b.by[topic]
	if k == nil {
		k = &topicBlock{since: now}
		b.by[topic] = k
	} else if now.Before(k.until) {
		// Another row of the same round: the block already covers it.
		if k.reason == reason {
			return k.until.Sub(now)
		}
	}
	if k.reason != "" && k.reason != reason {
		b.gauge.DeleteLabelValues(topic, string(k.reason))
	}
	k.reason, k.err = reason, err
	delay := b.policy.Delay(k.failures)
	k.failures++
	k.until = now.Add(delay)
	b.gauge.WithLabelValues(topic, string(reason)).Set(1)
	return delay
}

// published clears topic's block: a publish to it succeeded.
func (b *topicBlocks) published(topic string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k := b.by[topic]; k != nil {
		b.gauge.DeleteLabelValues(topic, string(k.reason))
		delete(b.by, topic)
	}
}

// blocked reports whether topic is blocked now, for how much longer and
// why.
func (b *topicBlocks) blocked(topic string) (time.Duration, errclass.Reason, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.by[topic]
	if k == nil {
		return 0, "", false
	}
	left := time.Until(k.until)
	if left <= 0 {
		return 0, "", false // the next row probes
	}
	return left, k.reason, true
}

// Check is the readiness check "publish_blocked": it fails while a topic is
// blocked, naming each topic, its reason and since when.
func (b *topicBlocks) Check(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.by) == 0 {
		return nil
	}
	var parts []string
	for topic, k := range b.by {
		parts = append(parts, fmt.Sprintf("topic %s: %s for %s (%s)", topic, k.reason, time.Since(k.since).Round(time.Second), k.err))
	}
	sort.Strings(parts)
	return fmt.Errorf("publishing paused: %s", strings.Join(parts, "; "))
}
