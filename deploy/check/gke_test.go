package check

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

const (
	gkeOverlay     = "deploy/k8s/overlays/gke"
	podMonitorFile = "deploy/monitoring/podmonitors.yaml"
)

// appKustomizations are those of the apps (never a Config Connector object).
var appKustomizations = kustomizations

// TestGKEPolicies runs every policy of policies.go on the real manifests.
func TestGKEPolicies(t *testing.T) {
	exported, err := ExportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	budget := ReadyCheckBudget()
	if budget < time.Second {
		t.Fatalf("readiness check budget measured %s: want the health package's timeout (2s)", budget)
	}
	for _, dir := range appKustomizations {
		o := render(t, dir)
		report(t, dir, ConfigConnectorProblems(o, true))
		report(t, dir, SpreadProblems(o))
		report(t, dir, ReadinessProblems(o, budget))
		report(t, dir, NetworkPolicyProblems(o))
		report(t, dir, NamespaceProblems(o))
		report(t, dir, HPAProblems(o, exported))
		report(t, dir, GoMemLimitProblems(o))
	}
	gke := render(t, gkeOverlay)
	report(t, gkeOverlay, MonitorProblems(gke))
	report(t, gkeOverlay, DigestProblems(gke))
	report(t, gkeOverlay, PhaseProblems(gke))
	if len(gke.Namespaces) != 0 {
		t.Errorf("%s: the Namespace belongs to %s (deleting the apps must not delete the namespace and its Config Connector objects)", gkeOverlay, gkeResources)
	}
	if len(gke.HPAs) != 2 || len(gke.Rules) != 1 || len(gke.PodMonitorings) != 3 {
		t.Errorf("%s: %d HPAs, %d Rules, %d PodMonitorings; want 2, 1, 3", gkeOverlay, len(gke.HPAs), len(gke.Rules), len(gke.PodMonitorings))
	}
	res := render(t, gkeResources)
	report(t, gkeResources, ConfigConnectorProblems(res, false))
	report(t, gkeResources, NamespaceProblems(res))
	report(t, gkeResources, PubSubIAMProblems(res))
	if len(res.Topics) == 0 || len(res.Subscriptions) == 0 || len(res.Namespaces) != 1 || len(res.Deployments) != 0 {
		t.Errorf("%s: want the namespace and the Pub/Sub objects only", gkeResources)
	}
	report(t, podMonitorFile, PodMonitorProblems(render(t, "deploy/k8s/base").Deployments, podMonitors(t)))
}

func report(t *testing.T, where string, problems []string) {
	t.Helper()
	for _, p := range problems {
		t.Errorf("%s: %s", where, p)
	}
}

func podMonitors(t *testing.T) []*PodMonitor {
	t.Helper()
	var out []*PodMonitor
	for _, doc := range strings.Split(string(readRepo(t, podMonitorFile)), "\n---\n") {
		m := &PodMonitor{}
		if err := yaml.UnmarshalStrict([]byte(doc), m); err != nil {
			t.Fatalf("%s: %v", podMonitorFile, err)
		}
		if m.Kind != "PodMonitor" || m.APIVersion != "monitoring.coreos.com/v1" {
			t.Fatalf("%s: %s %s, want monitoring.coreos.com/v1 PodMonitor", podMonitorFile, m.APIVersion, m.Kind)
		}
		out = append(out, m)
	}
	return out
}

func deployment(o *Objects, name string) *appsv1.Deployment {
	for _, d := range o.Deployments {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// TestPoliciesCatchBrokenManifests breaks the real manifests one way each
// and expects the policy that holds it to say so.
func TestPoliciesCatchBrokenManifests(t *testing.T) {
	exported, err := ExportedMetrics()
	if err != nil {
		t.Fatal(err)
	}
	cases := []brokenCase{
		{"monitor selector misses the projector", gkeOverlay,
			func(o *Objects) { o.PodMonitorings[1].Spec.Selector.MatchLabels[NameLabel] = "projektor" },
			MonitorProblems, "Deployment projector: no PodMonitoring"},
		{"monitor port does not exist", gkeOverlay,
			func(o *Objects) { o.PodMonitorings[0].Spec.Endpoints[0].Port = intstr.FromString("metrics") },
			MonitorProblems, "port metrics is not a port of Deployment publisher"},
		{"monitor named apart from the alerts' job", gkeOverlay,
			func(o *Objects) { o.PodMonitorings[2].Name = "catalog-metrics" },
			MonitorProblems, `the alerts expect job="catalog"`},
		{"HPA on a metric Managed Prometheus never has", gkeOverlay,
			func(o *Objects) {
				o.HPAs[1].Spec.Metrics[0].External.Metric.Name = "prometheus.googleapis.com|outbox_lag|gauge"
			},
			func(o *Objects) []string { return HPAProblems(o, exported) }, "neither a recording rule"},
		{"HPA summing a global gauge", gkeOverlay,
			func(o *Objects) {
				o.HPAs[1].Spec.Metrics[0].External.Metric.Name = "prometheus.googleapis.com|outbox_lag_events|gauge"
			},
			func(o *Objects) []string { return HPAProblems(o, exported) }, "outbox_lag_events is global"},
		{"replicas under an HPA", gkeOverlay,
			func(o *Objects) { n := int32(3); deployment(o, "projector").Spec.Replicas = &n },
			func(o *Objects) []string { return HPAProblems(o, exported) }, "replicas 3 set under HPA"},
		{"no zone spread", gkeOverlay,
			func(o *Objects) { deployment(o, "catalog").Spec.Template.Spec.TopologySpreadConstraints = nil },
			SpreadProblems, "Deployment catalog: no topologySpreadConstraint"},
		{"PDB allowing 0 available", "deploy/k8s/base",
			func(o *Objects) { o.PDBs[1].Spec.MinAvailable = nil },
			SpreadProblems, "want minAvailable >= 1"},
		{"readiness probe at the default 1s", gkeOverlay,
			func(o *Objects) {
				deployment(o, "publisher").Spec.Template.Spec.Containers[0].ReadinessProbe.TimeoutSeconds = 0
			},
			func(o *Objects) []string { return ReadinessProblems(o, 2*time.Second) }, "readiness timeoutSeconds 1"},
		{"no default deny", gkeOverlay,
			func(o *Objects) { o.NetworkPolicies = o.NetworkPolicies[1:] },
			NetworkPolicyProblems, "no default-deny ingress"},
		{"metrics port closed", gkeOverlay,
			func(o *Objects) { o.NetworkPolicies = o.NetworkPolicies[:2] },
			NetworkPolicyProblems, "Deployment publisher: no NetworkPolicy"},
		{"namespace without PSA", gkeResources,
			func(o *Objects) { delete(o.Namespaces[0].Labels, "pod-security.kubernetes.io/enforce") },
			NamespaceProblems, "enforce=restricted missing"},
		{"image by tag", gkeOverlay,
			func(o *Objects) {
				o.Jobs[0].Spec.Template.Spec.Containers[0].Image = "europe-west1-docker.pkg.dev/p/eventrelay/relayctl:v0.1.0"
			},
			DigestProblems, "Job migrate-v0.0.0-unset: container relayctl image"},
		{"Config Connector object without abandon", gkeResources,
			func(o *Objects) { delete(o.Subscriptions[2].Annotations, DeletionPolicyAnnotation) },
			func(o *Objects) []string { return ConfigConnectorProblems(o, false) }, "abandon missing"},
		{"dead-letter subscription expiring", gkeResources,
			func(o *Objects) { o.Subscriptions[3].Spec.ExpirationPolicy = nil },
			func(o *Objects) []string { return ConfigConnectorProblems(o, false) }, "catalog.video.events.dlq-es: want expirationPolicy"},
		{"GOMEMLIMIT at the memory limit", gkeOverlay,
			func(o *Objects) {
				env := deployment(o, "projector").Spec.Template.Spec.Containers[0].Env
				for i := range env {
					if env[i].Name == "GOMEMLIMIT" {
						env[i].Value = "1GiB"
					}
				}
			},
			GoMemLimitProblems, "GOMEMLIMIT 1GiB is not 70-95%"},
		{"HPA outside the projector's rollout phase", gkeOverlay,
			func(o *Objects) { delete(o.HPAs[0].Labels, ComponentLabel) },
			PhaseProblems, "HorizontalPodAutoscaler projector: label"},
		{"dead letters with no service agent grant", gkeResources,
			func(o *Objects) { o.IAMMembers = o.IAMMembers[:len(o.IAMMembers)-1] },
			PubSubIAMProblems, "catalog.video.events.dlq-es roles/pubsub.publisher pubsub-agent missing"},
		{"binding on an undeclared subscription", gkeResources,
			func(o *Objects) { o.IAMMembers[2].Spec.ResourceRef.Name = "catalog.video.projection" },
			PubSubIAMProblems, "PubSubSubscription/catalog.video.projection is not declared"},
		{"Config Connector object among the apps", gkeOverlay,
			func(o *Objects) {
				o.ConfigConnector = append(o.ConfigConnector, &metav1.ObjectMeta{Name: "catalog.video.events",
					Annotations: map[string]string{DeletionPolicyAnnotation: "abandon"}})
			},
			func(o *Objects) []string { return ConfigConnectorProblems(o, true) }, "is in an apps kustomization"},
	}
	runBrokenCases(t, cases)
}

// TestAlertQueriesCatchBrokenRules: the aggregation and job checks fail on
// broken expressions.
func TestAlertQueriesCatchBrokenRules(t *testing.T) {
	for expr, want := range map[string]int{
		`max(outbox_oldest_age_seconds) > 60`:                                1,
		`sum by (reason) (increase(outbox_terminal_failed_total[15m])) > 0`:  1,
		`max by (cluster, namespace) (outbox_oldest_age_seconds) > 60`:       0,
		`max by (namespace) (projector_receiving) == 0`:                      1,
		`sum by (cluster, namespace, job) (up{job=~"publisher|worker"}) < 1`: 0,
	} {
		if got := AggregationProblems(expr); len(got) != want {
			t.Errorf("AggregationProblems(%s) = %q, want %d", expr, got, want)
		}
	}
	jobs := map[string]bool{"publisher": true, "projector": true, "catalog": true}
	if got := JobProblems(`up{job=~"publisher|worker"} or absent(up{job="eventrelay/projector"})`, jobs); len(got) != 2 {
		t.Errorf("JobProblems = %q, want the jobs worker and eventrelay/projector", got)
	}
}
