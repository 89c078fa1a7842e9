package gpubsub

import (
	"strings"
	"testing"
	"time"
)

func TestResourcesValidateNamesTheKey(t *testing.T) {
	t.Parallel()
	base := func() Resources {
		return Resources{
			Topics: []TopicSpec{{Name: "main.events"}, {Name: "main.events.dlq"}},
			Subscriptions: []SubscriptionSpec{{
				Name: "main.sub", Topic: "main.events",
				Retry:      &RetrySpec{},
				DeadLetter: &DeadLetterSpec{Topic: "main.events.dlq"},
			}},
		}
	}
	r := base()
	if err := r.Validate(); err != nil {
		t.Fatalf("valid resources: %v", err)
	}
	s := r.Subscriptions[0]
	if s.AckDeadline != 10*time.Second || s.Retention != 7*24*time.Hour ||
		s.Retry.MinBackoff != 10*time.Second || s.Retry.MaxBackoff != 600*time.Second || s.DeadLetter.MaxDeliveryAttempts != 5 {
		t.Fatalf("defaults not filled: %+v %+v %+v", s, s.Retry, s.DeadLetter)
	}
	for _, tc := range []struct {
		key    string
		mutate func(*Resources)
	}{
		{"topics[0].name", func(r *Resources) { r.Topics[0].Name = "x" }},
		{"topics[1].name", func(r *Resources) { r.Topics[1].Name = "main.events" }},
		{"topics[0].retention", func(r *Resources) { r.Topics[0].Retention = time.Minute }},
		{"subscriptions[0].topic", func(r *Resources) { r.Subscriptions[0].Topic = "other" }},
		{"subscriptions[0].ack_deadline", func(r *Resources) { r.Subscriptions[0].AckDeadline = 5 * time.Second }},
		{"subscriptions[0].retention", func(r *Resources) { r.Subscriptions[0].Retention = 8 * 24 * time.Hour }},
		{"subscriptions[0].retry", func(r *Resources) {
			r.Subscriptions[0].Retry = &RetrySpec{MinBackoff: time.Minute, MaxBackoff: time.Second}
		}},
		{"subscriptions[0].dead_letter.topic", func(r *Resources) { r.Subscriptions[0].DeadLetter.Topic = "main.events" }},
		{"subscriptions[0].dead_letter.max_delivery_attempts", func(r *Resources) { r.Subscriptions[0].DeadLetter.MaxDeliveryAttempts = 200 }},
		{"subscriptions[1].name", func(r *Resources) { r.Subscriptions = append(r.Subscriptions, r.Subscriptions[0]) }},
	} {
		r := base()
		tc.mutate(&r)
		err := r.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: error %v, want it to name the key", tc.key, err)
		}
	}
}
