package check

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/yaml"
)

// Objects is one rendered kustomization, decoded.
type Objects struct {
	Deployments     []*appsv1.Deployment
	Jobs            []*batchv1.Job
	PDBs            []*policyv1.PodDisruptionBudget
	HPAs            []*autoscalingv2.HorizontalPodAutoscaler
	ServiceAccounts []*corev1.ServiceAccount
	Secrets         []*corev1.Secret
	Namespaces      []*corev1.Namespace
	NetworkPolicies []*networkingv1.NetworkPolicy
	PodMonitorings  []*PodMonitoring
	Rules           []*GMPRules
	Topics          []*PubSubTopic
	Subscriptions   []*PubSubSubscription
	IAMMembers      []*IAMPolicyMember
	AlertPolicies   []*MonitoringAlertPolicy
	ConfigMaps      []*corev1.ConfigMap
	Other           int // Services (decoded strictly, no policy)
	// ConfigConnector are the metadata of every *.cnrm.cloud.google.com
	// object, whatever its kind.
	ConfigConnector []*metav1.ObjectMeta
}

// Decode strictly decodes every object of m into its API type: an unknown
// field or an unknown kind is an error naming the object.
func Decode(m resmap.ResMap) (*Objects, error) {
	o := &Objects{}
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		id := r.CurId().String()
		var target any
		switch gvk := r.GetGvk(); gvk.Group + "/" + gvk.Version + "/" + gvk.Kind {
		case "apps/v1/Deployment":
			d := &appsv1.Deployment{}
			o.Deployments, target = append(o.Deployments, d), d
		case "batch/v1/Job":
			j := &batchv1.Job{}
			o.Jobs, target = append(o.Jobs, j), j
		case "policy/v1/PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			o.PDBs, target = append(o.PDBs, p), p
		case "autoscaling/v2/HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			o.HPAs, target = append(o.HPAs, h), h
		case "/v1/ServiceAccount":
			s := &corev1.ServiceAccount{}
			o.ServiceAccounts, target = append(o.ServiceAccounts, s), s
		case "/v1/Secret":
			s := &corev1.Secret{}
			o.Secrets, target = append(o.Secrets, s), s
		case "/v1/ConfigMap":
			c := &corev1.ConfigMap{}
			o.ConfigMaps, target = append(o.ConfigMaps, c), c
		case "/v1/Service":
			target, o.Other = &corev1.Service{}, o.Other+1
		case "/v1/Namespace":
			n := &corev1.Namespace{}
			o.Namespaces, target = append(o.Namespaces, n), n
		case "networking.k8s.io/v1/NetworkPolicy":
			n := &networkingv1.NetworkPolicy{}
			o.NetworkPolicies, target = append(o.NetworkPolicies, n), n
		case "monitoring.googleapis.com/v1/PodMonitoring":
			p := &PodMonitoring{}
			o.PodMonitorings, target = append(o.PodMonitorings, p), p
		case "monitoring.googleapis.com/v1/Rules":
			g := &GMPRules{}
			o.Rules, target = append(o.Rules, g), g
		case "pubsub.cnrm.cloud.google.com/v1beta1/PubSubTopic":
			t := &PubSubTopic{}
			o.Topics, target = append(o.Topics, t), t
			o.ConfigConnector = append(o.ConfigConnector, &t.ObjectMeta)
		case "pubsub.cnrm.cloud.google.com/v1beta1/PubSubSubscription":
			s := &PubSubSubscription{}
			o.Subscriptions, target = append(o.Subscriptions, s), s
			o.ConfigConnector = append(o.ConfigConnector, &s.ObjectMeta)
		case "iam.cnrm.cloud.google.com/v1beta1/IAMPolicyMember":
			m := &IAMPolicyMember{}
			o.IAMMembers, target = append(o.IAMMembers, m), m
			o.ConfigConnector = append(o.ConfigConnector, &m.ObjectMeta)
		case "monitoring.cnrm.cloud.google.com/v1beta1/MonitoringAlertPolicy":
			p := &MonitoringAlertPolicy{}
			o.AlertPolicies, target = append(o.AlertPolicies, p), p
			o.ConfigConnector = append(o.ConfigConnector, &p.ObjectMeta)
		default:
			if strings.HasSuffix(gvk.Group, ".cnrm.cloud.google.com") {
				return nil, fmt.Errorf("%s: Config Connector kind not known to deploy/check (add its API type)", id)
			}
			return nil, fmt.Errorf("%s: kind not known to deploy/check (add its API type)", id)
		}
		if err := yaml.UnmarshalStrict(b, target); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", id, err)
		}
	}
	return o, nil
}
