package check

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestGKEReleasePolicies runs the policies of gkepolicies.go and the
// subscription alert coverage on the real manifests.
func TestGKEReleasePolicies(t *testing.T) {
	for _, dir := range appKustomizations {
		report(t, dir, ScrapeNamespaceProblems(render(t, dir)))
	}
	gke := render(t, gkeOverlay)
	report(t, gkeOverlay, HPAClusterProblems(gke))
	report(t, gkeOverlay, ElasticProblems(gke))
	report(t, gkeOverlay, MigrationReleaseProblems(gke))
	if len(gke.ConfigMaps) != 1 || len(gke.Jobs) != 1 {
		t.Errorf("%s: %d ConfigMaps, %d Jobs; want the release ConfigMap and one migration Job", gkeOverlay, len(gke.ConfigMaps), len(gke.Jobs))
	}
	res := render(t, gkeResources)
	if len(res.AlertPolicies) == 0 {
		t.Errorf("%s: no MonitoringAlertPolicy", gkeResources)
	}
}

func env(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// brokenCase breaks a rendering of dir one way; check is the policy that
// must then report a problem containing want (and none before).
type brokenCase struct {
	name   string
	dir    string
	breakt func(o *Objects)
	check  func(o *Objects) []string
	want   string
}

func runBrokenCases(t *testing.T, cases []brokenCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := render(t, c.dir)
			if got := c.check(o); len(got) != 0 {
				t.Fatalf("unbroken %s already has problems: %q", c.dir, got)
			}
			c.breakt(o)
			got := strings.Join(c.check(o), "\n")
			if !strings.Contains(got, c.want) {
				t.Errorf("broken %s: problems %q, want one containing %q", c.dir, got, c.want)
			}
		})
	}
}

// TestGKEPoliciesCatchBrokenManifests breaks the real manifests one way
// each and expects the policy that holds it to say so.
func TestGKEPoliciesCatchBrokenManifests(t *testing.T) {
	res, err := LoadPubSubYAML()
	if err != nil {
		t.Fatal(err)
	}
	projector := func(o *Objects) *corev1.Container {
		return &deployment(o, "projector").Spec.Template.Spec.Containers[0]
	}
	cases := []brokenCase{
		{"metrics port closed to Autopilot's collector", gkeOverlay,
			func(o *Objects) {
				for _, p := range o.NetworkPolicies {
					for _, r := range p.Spec.Ingress {
						for _, f := range r.From {
							if f.NamespaceSelector != nil {
								f.NamespaceSelector.MatchExpressions[0].Values = []string{"gmp-system", "monitoring"}
							}
						}
					}
				}
			},
			ScrapeNamespaceProblems, "Deployment publisher: no NetworkPolicy admits namespace gke-gmp-system"},
		{"publisher HPA by namespace only", gkeOverlay,
			func(o *Objects) {
				sel := o.HPAs[1].Spec.Metrics[0].External.Metric.Selector
				delete(sel.MatchLabels, "resource.labels.cluster")
				delete(sel.MatchLabels, "resource.labels.location")
			},
			HPAClusterProblems, "HPA publisher: metric prometheus.googleapis.com|outbox_lag_events_max|gauge selector lacks resource.labels.cluster"},
		{"IAM binding abandoned on delete", gkeResources,
			func(o *Objects) {
				o.IAMMembers[0].Annotations = map[string]string{DeletionPolicyAnnotation: "abandon"}
			},
			func(o *Objects) []string { return ConfigConnectorProblems(o, false) },
			"Config Connector object publisher-publishes-events: annotation cnrm.cloud.google.com/deletion-policy: abandon (removing it from git must revoke it"},
		{"Elasticsearch over plain http", gkeOverlay,
			func(o *Objects) { env(projector(o), "ELASTIC_URL").Value = "http://elasticsearch:9200" },
			ElasticProblems, `ELASTIC_URL is "http://elasticsearch:9200": want https`},
		{"Elasticsearch password as a literal", gkeOverlay,
			func(o *Objects) {
				*env(projector(o), "ELASTIC_PASSWORD") = corev1.EnvVar{Name: "ELASTIC_PASSWORD", Value: "changeme"}
			},
			ElasticProblems, "ELASTIC_PASSWORD is not from a Secret"},
		{"Elasticsearch without credentials", gkeOverlay,
			func(o *Objects) {
				c := projector(o)
				var kept []corev1.EnvVar
				for _, e := range c.Env {
					if !strings.HasPrefix(e.Name, "ELASTIC_USERNAME") {
						kept = append(kept, e)
					}
				}
				c.Env = kept
			},
			ElasticProblems, "ELASTIC_USERNAME is not from a Secret"},
		{"migration Job with a fixed name", gkeOverlay,
			func(o *Objects) { o.Jobs[0].Name = "migrate" },
			MigrationReleaseProblems, "Job migrate: want the name migrate-v0.0.0-unset"},
		{"migration Job recording another release", gkeOverlay,
			func(o *Objects) {
				env(&o.Jobs[0].Spec.Template.Spec.Containers[0], "EVENTRELAY_RELEASE").Value = "base"
			},
			MigrationReleaseProblems, `EVENTRELAY_RELEASE "base", want the release "v0.0.0-unset"`},
		{"release not a name", gkeOverlay,
			func(o *Objects) { o.ConfigMaps[0].Data["EVENTRELAY_RELEASE"] = "V1.0 final" },
			MigrationReleaseProblems, `EVENTRELAY_RELEASE "V1.0 final", want a release`},
		{"Cloud SQL proxy by tag", gkeOverlay,
			func(o *Objects) {
				deployment(o, "projector").Spec.Template.Spec.InitContainers[0].Image = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.3"
			},
			DigestProblems, `Deployment projector: container cloud-sql-proxy image "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.3" is not by digest`},
		{"dead-letter subscription without its oldest-unacked policy", gkeResources,
			func(o *Objects) {
				var kept []*MonitoringAlertPolicy
				for _, p := range o.AlertPolicies {
					if p.Name != "catalog.video.events.dlq-es-oldest-unacked" {
						kept = append(kept, p)
					}
				}
				o.AlertPolicies = kept
			},
			func(o *Objects) []string { return SubscriptionAlertProblems(o, res) },
			"subscription catalog.video.events.dlq-es: no MonitoringAlertPolicy on subscription/oldest_unacked_message_age"},
		{"backlog policy watching another subscription", gkeResources,
			func(o *Objects) {
				c := o.AlertPolicies[0].Spec.Conditions[0].ConditionThreshold
				c.Filter = strings.Replace(c.Filter, "catalog.video.projection-pg", "catalog.video.projection", 1)
			},
			func(o *Objects) []string { return SubscriptionAlertProblems(o, res) },
			"subscription catalog.video.projection-pg: no MonitoringAlertPolicy on subscription/num_undelivered_messages"},
	}
	runBrokenCases(t, cases)
}
