package gpubsub

import (
	"fmt"
	"regexp"
	"time"
)

// Resources is a desired set of topics and subscriptions (configs/pubsub.yaml),
// applied by Ensure.
type Resources struct {
	Topics        []TopicSpec        `yaml:"topics"`
	Subscriptions []SubscriptionSpec `yaml:"subscriptions"`
}

// TopicSpec is one topic.
type TopicSpec struct {
	Name string `yaml:"name"`
	// Retention keeps published messages on the topic (0: none), so a
	// subscription can seek to before its own creation.
	Retention time.Duration `yaml:"retention"`
}

// SubscriptionSpec is one pull subscription. Zero values take the defaults
// set by Validate.
type SubscriptionSpec struct {
	Name  string `yaml:"name"`
	Topic string `yaml:"topic"`
	// Ordered enables message ordering (immutable after creation).
	Ordered bool `yaml:"ordered"`
	// AckDeadline, 10s to 600s (default 10s).
	AckDeadline time.Duration `yaml:"ack_deadline"`
	// Retention of unacked (and with RetainAcked, acked) messages, 10m to
	// 7d (default 7d). Seek to a time needs RetainAcked.
	Retention   time.Duration `yaml:"retention"`
	RetainAcked bool          `yaml:"retain_acked"`
	ExactlyOnce bool          `yaml:"exactly_once"`
	// Retry is the redelivery backoff (nil: immediate redelivery).
	Retry *RetrySpec `yaml:"retry"`
	// DeadLetter forwards messages after MaxDeliveryAttempts (nil: never).
	DeadLetter *DeadLetterSpec `yaml:"dead_letter"`
}

// RetrySpec is a subscription retry policy.
type RetrySpec struct {
	MinBackoff time.Duration `yaml:"min_backoff"` // 0-600s, default 10s
	MaxBackoff time.Duration `yaml:"max_backoff"` // 0-600s, default 600s
}

// DeadLetterSpec is a subscription dead-letter policy.
type DeadLetterSpec struct {
	Topic               string `yaml:"topic"`
	MaxDeliveryAttempts int32  `yaml:"max_delivery_attempts"` // 5-100, default 5
}

var resourceID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}$`)

// Validate checks the specs and fills defaults; errors name the key.
func (r *Resources) Validate() error {
	topics := map[string]bool{}
	for i := range r.Topics {
		t := &r.Topics[i]
		key := fmt.Sprintf("topics[%d]", i)
		if !resourceID.MatchString(t.Name) {
			return fmt.Errorf("%s.name %q is not a valid Pub/Sub topic id", key, t.Name)
		}
		if topics[t.Name] {
			return fmt.Errorf("%s.name %q is listed twice", key, t.Name)
		}
		topics[t.Name] = true
		if t.Retention != 0 && (t.Retention < 10*time.Minute || t.Retention > 31*24*time.Hour) {
			return fmt.Errorf("%s.retention %s must be 0 or between 10m and 744h", key, t.Retention)
		}
	}
	subs := map[string]bool{}
	for i := range r.Subscriptions {
		if err := r.Subscriptions[i].validate(fmt.Sprintf("subscriptions[%d]", i), topics); err != nil {
			return err
		}
		if subs[r.Subscriptions[i].Name] {
			return fmt.Errorf("subscriptions[%d].name %q is listed twice", i, r.Subscriptions[i].Name)
		}
		subs[r.Subscriptions[i].Name] = true
	}
	return nil
}

func (s *SubscriptionSpec) validate(key string, topics map[string]bool) error {
	switch {
	case !resourceID.MatchString(s.Name):
		return fmt.Errorf("%s.name %q is not a valid Pub/Sub subscription id", key, s.Name)
	case !topics[s.Topic]:
		return fmt.Errorf("%s.topic %q is not one of the topics listed", key, s.Topic)
	}
	if s.AckDeadline == 0 {
		s.AckDeadline = 10 * time.Second
	}
	if d := s.AckDeadline; d < 10*time.Second || d > 600*time.Second || d%time.Second != 0 {
		return fmt.Errorf("%s.ack_deadline %s must be whole seconds between 10s and 600s", key, s.AckDeadline)
	}
	if s.Retention == 0 {
		s.Retention = 7 * 24 * time.Hour
	}
	if d := s.Retention; d < 10*time.Minute || d > 7*24*time.Hour {
		return fmt.Errorf("%s.retention %s must be between 10m and 168h", key, s.Retention)
	}
	if r := s.Retry; r != nil {
		if r.MinBackoff == 0 {
			r.MinBackoff = 10 * time.Second
		}
		if r.MaxBackoff == 0 {
			r.MaxBackoff = 600 * time.Second
		}
		if r.MinBackoff < 0 || r.MaxBackoff > 600*time.Second || r.MinBackoff > r.MaxBackoff {
			return fmt.Errorf("%s.retry: need 0 <= min_backoff (%s) <= max_backoff (%s) <= 600s", key, r.MinBackoff, r.MaxBackoff)
		}
	}
	if dl := s.DeadLetter; dl != nil {
		if !topics[dl.Topic] {
			return fmt.Errorf("%s.dead_letter.topic %q is not one of the topics listed", key, dl.Topic)
		}
		if dl.Topic == s.Topic {
			return fmt.Errorf("%s.dead_letter.topic must differ from the subscription's topic", key)
		}
		if dl.MaxDeliveryAttempts == 0 {
			dl.MaxDeliveryAttempts = 5
		}
		if dl.MaxDeliveryAttempts < 5 || dl.MaxDeliveryAttempts > 100 {
			return fmt.Errorf("%s.dead_letter.max_delivery_attempts %d must be between 5 and 100", key, dl.MaxDeliveryAttempts)
		}
	}
	return nil
}

// Subscription returns the spec named id, or nil.
func (r *Resources) Subscription(id string) *SubscriptionSpec {
	for i := range r.Subscriptions {
		if r.Subscriptions[i].Name == id {
			return &r.Subscriptions[i]
		}
	}
	return nil
}
