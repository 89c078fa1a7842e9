package check

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/eventrelay/eventrelay/relayctl"
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

// PubSubResources are the topics and subscriptions of
// configs/pubsub.yaml, every default applied, as `relayctl pubsub validate
// --json` prints them.
type PubSubResources struct {
	ProjectID     string                 `json:"project_id"`
	Topics        []DeclaredTopic        `json:"topics"`
	Subscriptions []DeclaredSubscription `json:"subscriptions"`
}

// DeclaredTopic is one topic of the resources file.
type DeclaredTopic struct {
	Name      string         `json:"name"`
	Retention PubSubDuration `json:"retention"` // 0: none
}

// DeclaredSubscription is one subscription of the resources file.
type DeclaredSubscription struct {
	Name        string         `json:"name"`
	Topic       string         `json:"topic"`
	Ordered     bool           `json:"ordered"`
	AckDeadline PubSubDuration `json:"ack_deadline"`
	Retention   PubSubDuration `json:"retention"`
	RetainAcked bool           `json:"retain_acked"`
	ExactlyOnce bool           `json:"exactly_once"`
	Retry       *struct {
		MinBackoff PubSubDuration `json:"min_backoff"`
		MaxBackoff PubSubDuration `json:"max_backoff"`
	} `json:"retry"`
	DeadLetter *struct {
		Topic               string `json:"topic"`
		MaxDeliveryAttempts int32  `json:"max_delivery_attempts"`
	} `json:"dead_letter"`
}

// PubSubDuration is a duration as Pub/Sub's API writes it ("600s").
type PubSubDuration time.Duration

// UnmarshalJSON reads "600s".
func (d *PubSubDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil || !strings.HasSuffix(s, "s") {
		return fmt.Errorf("duration %q: want seconds such as \"600s\"", s)
	}
	*d = PubSubDuration(v)
	return nil
}

// LoadPubSubYAML reads configs/pubsub.yaml through relayctl, as a
// service's CI would (`relayctl pubsub validate -f configs/pubsub.yaml
// --json`), with no environment overrides.
func LoadPubSubYAML() (PubSubResources, error) {
	path := filepath.Join(Repo(), "configs", "pubsub.yaml")
	var out, errb bytes.Buffer
	noEnv := func(string) (string, bool) { return "", false }
	if code := relayctl.MainEnv(context.Background(), []string{"pubsub", "validate", "-f", path, "--json"}, &out, &errb, relayctl.Hooks{}, noEnv); code != relayctl.ExitOK {
		return PubSubResources{}, fmt.Errorf("relayctl pubsub validate -f %s: exit %d: %s", path, code, strings.TrimSpace(errb.String()))
	}
	var r PubSubResources
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields() // a new setting must be compared with the manifests too
	if err := dec.Decode(&r); err != nil {
		return PubSubResources{}, fmt.Errorf("relayctl pubsub validate -f %s --json: %w", path, err)
	}
	return r, nil
}

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) + "s" }

// ExpectedPubSub is the Config Connector form of r.
func ExpectedPubSub(r PubSubResources) ([]*PubSubTopic, []*PubSubSubscription) {
	var topics []*PubSubTopic
	for _, t := range r.Topics {
		o := &PubSubTopic{TypeMeta: metav1.TypeMeta{APIVersion: "pubsub.cnrm.cloud.google.com/v1beta1", Kind: "PubSubTopic"},
			ObjectMeta: metav1.ObjectMeta{Name: t.Name, Annotations: map[string]string{DeletionPolicyAnnotation: "abandon"}}}
		if t.Retention != 0 {
			o.Spec.MessageRetentionDuration = seconds(time.Duration(t.Retention))
		}
		topics = append(topics, o)
	}
	var subs []*PubSubSubscription
	for _, s := range r.Subscriptions {
		o := &PubSubSubscription{TypeMeta: metav1.TypeMeta{APIVersion: "pubsub.cnrm.cloud.google.com/v1beta1", Kind: "PubSubSubscription"},
			ObjectMeta: metav1.ObjectMeta{Name: s.Name, Annotations: map[string]string{DeletionPolicyAnnotation: "abandon"}},
			Spec: PubSubSubscriptionSpec{
				TopicRef:                  Ref{Name: s.Topic},
				AckDeadlineSeconds:        int32(time.Duration(s.AckDeadline) / time.Second),
				MessageRetentionDuration:  seconds(time.Duration(s.Retention)),
				RetainAckedMessages:       s.RetainAcked,
				EnableMessageOrdering:     s.Ordered,
				EnableExactlyOnceDelivery: s.ExactlyOnce,
				ExpirationPolicy:          &ExpirationPolicy{TTL: ""},
			}}
		if s.Retry != nil {
			o.Spec.RetryPolicy = &RetryPolicy{MinimumBackoff: seconds(time.Duration(s.Retry.MinBackoff)), MaximumBackoff: seconds(time.Duration(s.Retry.MaxBackoff))}
		}
		if s.DeadLetter != nil {
			o.Spec.DeadLetterPolicy = &DeadLetterPolicy{DeadLetterTopicRef: Ref{Name: s.DeadLetter.Topic}, MaxDeliveryAttempts: s.DeadLetter.MaxDeliveryAttempts}
		}
		subs = append(subs, o)
	}
	return topics, subs
}
