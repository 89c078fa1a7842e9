package check

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MonitoringAlertPolicy is monitoring.cnrm.cloud.google.com/v1beta1
// MonitoringAlertPolicy (Config Connector), the fields deploy/ uses; strict
// decoding refuses any other. Field names follow the CRD
// (k8s-config-connector pkg/clients/generated/apis/monitoring/v1beta1).
type MonitoringAlertPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              AlertPolicySpec `json:"spec"`
}

// AlertPolicySpec is the policy: its conditions, combined by Combiner.
type AlertPolicySpec struct {
	DisplayName   string              `json:"displayName"`
	Combiner      string              `json:"combiner"`
	Severity      string              `json:"severity,omitempty"`
	Documentation *AlertDocumentation `json:"documentation,omitempty"`
	Conditions    []AlertCondition    `json:"conditions"`
}

// AlertDocumentation is sent with every notification.
type AlertDocumentation struct {
	Content  string `json:"content"`
	MimeType string `json:"mimeType"`
}

// AlertCondition is one condition (deploy/ uses thresholds only).
type AlertCondition struct {
	DisplayName        string          `json:"displayName"`
	ConditionThreshold *AlertThreshold `json:"conditionThreshold"`
}

// AlertThreshold compares the series the filter selects, aligned
// by Aggregations, with ThresholdValue for Duration.
type AlertThreshold struct {
	Filter         string             `json:"filter"`
	Comparison     string             `json:"comparison"`
	ThresholdValue float64            `json:"thresholdValue"`
	Duration       string             `json:"duration"`
	Aggregations   []AlertAggregation `json:"aggregations"`
}

// AlertAggregation aligns each series over AlignmentPeriod.
type AlertAggregation struct {
	AlignmentPeriod  string `json:"alignmentPeriod"`
	PerSeriesAligner string `json:"perSeriesAligner"`
}

// The Cloud Monitoring metrics of a subscription (resource type
// pubsub_subscription, label subscription_id), both GAUGE INT64.
const (
	BacklogMetric   = "pubsub.googleapis.com/subscription/num_undelivered_messages"
	OldestAckMetric = "pubsub.googleapis.com/subscription/oldest_unacked_message_age"
)

// Thresholds of the generated policies.
const (
	// SourceBacklog is the projector HPA's ceiling (6 replicas x 5,000
	// messages each): a backlog above it the projector cannot outscale.
	SourceBacklog = 30000
	// SourceOldestAge: an event waiting 10 minutes is past every retry of
	// a healthy projection (the redelivery backoff caps at 60s).
	SourceOldestAge = 10 * time.Minute
)

// filterRE reads the metric and the subscription of a policy's filter.
var filterRE = regexp.MustCompile(`^metric\.type = "([^"]+)" AND resource\.type = "pubsub_subscription" AND resource\.labels\.subscription_id = "([^"]+)"$`)

func subscriptionFilter(metric, sub string) string {
	return fmt.Sprintf(`metric.type = %q AND resource.type = "pubsub_subscription" AND resource.labels.subscription_id = %q`, metric, sub)
}

// deadLetterSubscriptions are the subscriptions of r reading a topic some
// subscription dead-letters to.
func deadLetterSubscriptions(r PubSubResources) map[string]bool {
	dlq := map[string]bool{}
	for _, s := range r.Subscriptions {
		if s.DeadLetter != nil {
			dlq[s.DeadLetter.Topic] = true
		}
	}
	out := map[string]bool{}
	for _, s := range r.Subscriptions {
		if dlq[s.Topic] {
			out[s.Name] = true
		}
	}
	return out
}

const runbookBase = "https://github.com/eventrelay/eventrelay/blob/main/docs/runbook.md#"

// ExpectedAlertPolicies are two policies per subscription of r, one on its
// backlog and one on its oldest unacked message. A source subscription
// pages when its backlog exceeds SourceBacklog or its oldest message
// SourceOldestAge; a dead-letter subscription opens a ticket for any
// message waiting and pages when its oldest reaches half its retention
// (Pub/Sub drops it at the retention, dead letter and all).
func ExpectedAlertPolicies(r PubSubResources) []*MonitoringAlertPolicy {
	dead := deadLetterSubscriptions(r)
	var out []*MonitoringAlertPolicy
	for _, s := range r.Subscriptions {
		backlog, backlogFor, age := float64(SourceBacklog), 15*time.Minute, SourceOldestAge
		backlogSev, section, what := "CRITICAL", "13-a-subscription-cannot-be-received", "events wait for the projector"
		if dead[s.Name] {
			backlog, backlogFor, age = 0, 5*time.Minute, time.Duration(s.Retention)/2
			backlogSev, section, what = "WARNING", "5-dead-letters-piling-up", "dead letters wait for relayctl dlq replay"
		}
		doc := func(signal string) *AlertDocumentation {
			return &AlertDocumentation{MimeType: "text/markdown", Content: fmt.Sprintf(
				"%s on subscription `%s`: %s. `relayctl status -f configs/pubsub.yaml` names the backlog; the projector's `/readyz` and `projector_failed_total` by reason say why. Runbook: %s%s",
				signal, s.Name, what, runbookBase, section)}
		}
		policy := func(suffix, sev, display string, cond AlertCondition, d *AlertDocumentation) *MonitoringAlertPolicy {
			return &MonitoringAlertPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: "monitoring.cnrm.cloud.google.com/v1beta1", Kind: "MonitoringAlertPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: s.Name + "-" + suffix},
				Spec:       AlertPolicySpec{DisplayName: display, Combiner: "OR", Severity: sev, Documentation: d, Conditions: []AlertCondition{cond}},
			}
		}
		threshold := func(metric string, v float64, d time.Duration) *AlertThreshold {
			return &AlertThreshold{Filter: subscriptionFilter(metric, s.Name), Comparison: "COMPARISON_GT",
				ThresholdValue: v, Duration: seconds(d),
				Aggregations: []AlertAggregation{{AlignmentPeriod: "60s", PerSeriesAligner: "ALIGN_MAX"}}}
		}
		out = append(out,
			policy("backlog", backlogSev, fmt.Sprintf("eventrelay %s backlog over %g", s.Name, backlog),
				AlertCondition{DisplayName: "undelivered messages", ConditionThreshold: threshold(BacklogMetric, backlog, backlogFor)},
				doc(fmt.Sprintf("More than %g undelivered messages for %s", backlog, backlogFor))),
			policy("oldest-unacked", "CRITICAL", fmt.Sprintf("eventrelay %s oldest unacked over %s", s.Name, age),
				AlertCondition{DisplayName: "oldest unacked message age", ConditionThreshold: threshold(OldestAckMetric, age.Seconds(), 5*time.Minute)},
				doc(fmt.Sprintf("The oldest unacked message is older than %s", age))))
	}
	return out
}

// SubscriptionAlertProblems: every subscription of r (sources and
// dead-letter subscriptions) has an alert policy on its backlog and one on
// its oldest unacked message age, read from the policies' filters; a
// policy watching a subscription r does not declare is reported too.
func SubscriptionAlertProblems(o *Objects, r PubSubResources) []string {
	var out []string
	declared := map[string]bool{}
	for _, s := range r.Subscriptions {
		declared[s.Name] = true
	}
	watched := map[string]bool{} // subscription|metric
	for _, p := range o.AlertPolicies {
		for _, c := range p.Spec.Conditions {
			if c.ConditionThreshold == nil {
				continue
			}
			m := filterRE.FindStringSubmatch(c.ConditionThreshold.Filter)
			if m == nil {
				out = append(out, fmt.Sprintf("MonitoringAlertPolicy %s: filter %q is not metric.type = ... AND resource.type = \"pubsub_subscription\" AND resource.labels.subscription_id = ...", p.Name, c.ConditionThreshold.Filter))
				continue
			}
			if !declared[m[2]] {
				out = append(out, fmt.Sprintf("MonitoringAlertPolicy %s: subscription %s is not in configs/pubsub.yaml", p.Name, m[2]))
			}
			watched[m[2]+"|"+m[1]] = true
		}
	}
	for _, s := range r.Subscriptions {
		for _, metric := range []string{BacklogMetric, OldestAckMetric} {
			if !watched[s.Name+"|"+metric] {
				out = append(out, fmt.Sprintf("subscription %s: no MonitoringAlertPolicy on %s", s.Name, strings.TrimPrefix(metric, "pubsub.googleapis.com/")))
			}
		}
	}
	return out
}
