package check

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Managed Service for Prometheus (monitoring.googleapis.com/v1) and
// Prometheus Operator (monitoring.coreos.com/v1) objects, the fields
// deploy/ uses; strict decoding refuses any other.

// PodMonitoring is monitoring.googleapis.com/v1 PodMonitoring: Managed
// Service for Prometheus scrapes the pods it selects. Its name is the job
// label of the scraped series.
type PodMonitoring struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PodMonitoringSpec `json:"spec"`
}

// PodMonitoringSpec selects pods and the endpoints to scrape.
type PodMonitoringSpec struct {
	Selector  metav1.LabelSelector `json:"selector"`
	Endpoints []ScrapeEndpoint     `json:"endpoints"`
}

// ScrapeEndpoint is one port of a monitor (a container port name or number).
type ScrapeEndpoint struct {
	Port     intstr.IntOrString `json:"port"`
	Path     string             `json:"path,omitempty"`
	Interval string             `json:"interval,omitempty"`
}

// PodMonitor is monitoring.coreos.com/v1 PodMonitor (Prometheus Operator).
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PodMonitorSpec `json:"spec"`
}

// PodMonitorSpec selects pods; jobLabel names the pod label whose value
// becomes the job label.
type PodMonitorSpec struct {
	JobLabel            string               `json:"jobLabel,omitempty"`
	Selector            metav1.LabelSelector `json:"selector"`
	PodMetricsEndpoints []PodMetricsEndpoint `json:"podMetricsEndpoints"`
}

// PodMetricsEndpoint is one scraped port of a PodMonitor (a port name).
type PodMetricsEndpoint struct {
	Port     string `json:"port"`
	Path     string `json:"path,omitempty"`
	Interval string `json:"interval,omitempty"`
}

// GMPRules is monitoring.googleapis.com/v1 Rules: recording and alerting
// rules the managed rule evaluator runs over its namespace's series.
type GMPRules struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              GMPRulesSpec `json:"spec"`
}

// GMPRulesSpec holds the rule groups.
type GMPRulesSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a Prometheus rule group (interval is required by Rules).
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is a recording (Record) or alerting (Alert) rule.
type Rule struct {
	Record      string            `json:"record,omitempty"`
	Alert       string            `json:"alert,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}
