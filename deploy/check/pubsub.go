package check

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eventrelay/eventrelay/internal/gpubsub"
	"github.com/eventrelay/eventrelay/settings"
)

// Config Connector (cnrm) Pub/Sub objects, the fields deploy/ uses; strict
// decoding refuses any other.

// PubSubTopic is pubsub.cnrm.cloud.google.com/v1beta1 PubSubTopic.
type PubSubTopic struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PubSubTopicSpec `json:"spec"`
}

// PubSubTopicSpec is the topic's spec.
type PubSubTopicSpec struct {
	MessageRetentionDuration string `json:"messageRetentionDuration,omitempty"`
}

// PubSubSubscription is pubsub.cnrm.cloud.google.com/v1beta1 PubSubSubscription.
type PubSubSubscription struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PubSubSubscriptionSpec `json:"spec"`
}

// PubSubSubscriptionSpec is the subscription's spec.
type PubSubSubscriptionSpec struct {
	TopicRef                  Ref               `json:"topicRef"`
	AckDeadlineSeconds        int32             `json:"ackDeadlineSeconds"`
	MessageRetentionDuration  string            `json:"messageRetentionDuration"`
	RetainAckedMessages       bool              `json:"retainAckedMessages"`
	EnableMessageOrdering     bool              `json:"enableMessageOrdering"`
	EnableExactlyOnceDelivery bool              `json:"enableExactlyOnceDelivery"`
	RetryPolicy               *RetryPolicy      `json:"retryPolicy,omitempty"`
	DeadLetterPolicy          *DeadLetterPolicy `json:"deadLetterPolicy,omitempty"`
	ExpirationPolicy          *ExpirationPolicy `json:"expirationPolicy,omitempty"`
}

// ExpirationPolicy is a subscription's expiration: TTL "" never expires
// (without the field Pub/Sub deletes a subscription idle for 31 days).
type ExpirationPolicy struct {
	TTL string `json:"ttl"`
}

// DeletionPolicyAnnotation keeps the Google Cloud resource when its Config
// Connector object is deleted (kubectl delete, namespace deletion, prune).
const DeletionPolicyAnnotation = "cnrm.cloud.google.com/deletion-policy"

// Ref names another Config Connector object.
type Ref struct {
	Name string `json:"name"`
}

// RetryPolicy is a subscription's redelivery backoff.
type RetryPolicy struct {
	MinimumBackoff string `json:"minimumBackoff"`
	MaximumBackoff string `json:"maximumBackoff"`
}

// DeadLetterPolicy is a subscription's dead-letter policy.
type DeadLetterPolicy struct {
	DeadLetterTopicRef  Ref   `json:"deadLetterTopicRef"`
	MaxDeliveryAttempts int32 `json:"maxDeliveryAttempts"`
}

// IAMPolicyMember is iam.cnrm.cloud.google.com/v1beta1 IAMPolicyMember:
// one role for one member on one resource.
type IAMPolicyMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              IAMPolicyMemberSpec `json:"spec"`
}

// IAMPolicyMemberSpec is the binding.
type IAMPolicyMemberSpec struct {
	Member      string      `json:"member"`
	Role        string      `json:"role"`
	ResourceRef ResourceRef `json:"resourceRef"`
}

// ResourceRef names a Config Connector object of any kind.
type ResourceRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// pubsubFile is configs/pubsub.yaml.
type pubsubFile struct {
	PubSub            gpubsub.Config `yaml:"pubsub"`
	gpubsub.Resources `yaml:",inline"`
}

// LoadPubSubYAML reads configs/pubsub.yaml with the defaults relayctl
// pubsub ensure applies.
func LoadPubSubYAML() (gpubsub.Resources, error) {
	var f pubsubFile
	path := filepath.Join(Repo(), "configs", "pubsub.yaml")
	if err := settings.LoadWithEnv(path, &f, func(string) (string, bool) { return "", false }); err != nil {
		return gpubsub.Resources{}, fmt.Errorf("loading %s: %w", path, err)
	}
	return f.Resources, nil
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// ExpectedPubSub is the Config Connector form of r.
func ExpectedPubSub(r gpubsub.Resources) ([]*PubSubTopic, []*PubSubSubscription) {
	var topics []*PubSubTopic
	for _, t := range r.Topics {
		o := &PubSubTopic{TypeMeta: metav1.TypeMeta{APIVersion: "pubsub.cnrm.cloud.google.com/v1beta1", Kind: "PubSubTopic"},
			ObjectMeta: metav1.ObjectMeta{Name: t.Name, Annotations: map[string]string{DeletionPolicyAnnotation: "abandon"}}}
		if t.Retention != 0 {
			o.Spec.MessageRetentionDuration = seconds(t.Retention)
		}
		topics = append(topics, o)
	}
	var subs []*PubSubSubscription
	for _, s := range r.Subscriptions {
		o := &PubSubSubscription{TypeMeta: metav1.TypeMeta{APIVersion: "pubsub.cnrm.cloud.google.com/v1beta1", Kind: "PubSubSubscription"},
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Annotations: map[string]string{DeletionPolicyAnnotation: "abandon"}},
			Spec: PubSubSubscriptionSpec{
				TopicRef:                  Ref{Name: s.Topic},
				AckDeadlineSeconds:        int32(s.AckDeadline / time.Second),
				MessageRetentionDuration:  seconds(s.Retention),
				RetainAckedMessages:       s.RetainAcked,
				EnableMessageOrdering:     s.Ordered,
				EnableExactlyOnceDelivery: s.ExactlyOnce,
				ExpirationPolicy:          &ExpirationPolicy{TTL: ""},
			}}
		if s.Retry != nil {
			o.Spec.RetryPolicy = &RetryPolicy{MinimumBackoff: seconds(s.Retry.MinBackoff), MaximumBackoff: seconds(s.Retry.MaxBackoff)}
		}
		if s.DeadLetter != nil {
			o.Spec.DeadLetterPolicy = &DeadLetterPolicy{DeadLetterTopicRef: Ref{Name: s.DeadLetter.Topic}, MaxDeliveryAttempts: s.DeadLetter.MaxDeliveryAttempts}
		}
		subs = append(subs, o)
	}
	return topics, subs
}
