package check

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	catconf "github.com/eventrelay/eventrelay/examples/catalog-demo/conf"
)

// Policies of the gke overlay beyond the generic ones of policies.go:
// scraping on Autopilot, one cluster's metric for the publisher HPA,
// Elasticsearch credentials, one migration Job per release.

// ScrapeNamespaces are the namespaces Managed Service for Prometheus runs
// its collectors in: gmp-system on GKE Standard, gke-gmp-system on
// Autopilot.
var ScrapeNamespaces = []string{"gmp-system", "gke-gmp-system"}

// ScrapeNamespaceProblems: for every Deployment, some NetworkPolicy
// selecting its pods admits each of ScrapeNamespaces (by the
// kubernetes.io/metadata.name label) to its http port.
func ScrapeNamespaceProblems(o *Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		admitted := map[string]bool{}
		for _, p := range o.NetworkPolicies {
			if !selects(&p.Spec.PodSelector, d.Spec.Template.Labels) {
				continue
			}
			for _, r := range p.Spec.Ingress {
				http := false
				for _, port := range r.Ports {
					if port.Port != nil && (port.Port.String() == "http" || port.Port.IntValue() == portNumber(d.Spec.Template.Spec.Containers[0], "http")) {
						http = true
					}
				}
				if !http {
					continue
				}
				for _, from := range r.From {
					if from.NamespaceSelector == nil || from.PodSelector != nil {
						continue
					}
					for _, ns := range ScrapeNamespaces {
						if selects(from.NamespaceSelector, map[string]string{"kubernetes.io/metadata.name": ns}) {
							admitted[ns] = true
						}
					}
				}
			}
		}
		for _, ns := range ScrapeNamespaces {
			if !admitted[ns] {
				out = append(out, fmt.Sprintf("Deployment %s: no NetworkPolicy admits namespace %s to its http port (Managed Prometheus would never scrape it there)", d.Name, ns))
			}
		}
	}
	return out
}

// ClusterLabels keep one cluster's Managed Prometheus series apart from
// another's in the same project (prometheus_target resource labels; a
// cluster name is unique per location).
var ClusterLabels = []string{"resource.labels.location", "resource.labels.cluster", "resource.labels.namespace"}

// HPAClusterProblems: every external metric an HPA reads from Managed
// Prometheus selects one location, cluster and namespace: without them
// Cloud Monitoring returns every cluster's series of the project and the
// HPA scales on their sum.
func HPAClusterProblems(o *Objects) []string {
	var out []string
	for _, h := range o.HPAs {
		for _, m := range h.Spec.Metrics {
			if m.External == nil || !strings.HasPrefix(m.External.Metric.Name, "prometheus.googleapis.com|") {
				continue
			}
			var have map[string]string
			if sel := m.External.Metric.Selector; sel != nil {
				have = sel.MatchLabels
			}
			for _, l := range ClusterLabels {
				if have[l] == "" {
					out = append(out, fmt.Sprintf("HPA %s: metric %s selector lacks %s (two clusters of one project would sum their series)", h.Name, m.External.Metric.Name, l))
				}
			}
		}
	}
	return out
}

// ElasticProblems: a projector whose search projection is on (the
// default, catconf.DefaultProjections) reaches Elasticsearch over https
// with ELASTIC_USERNAME and ELASTIC_PASSWORD from a Secret, never as
// literals in the manifest.
func ElasticProblems(o *Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		if d.Name != "projector" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		env := map[string]corev1.EnvVar{}
		for _, e := range c.Env {
			env[e.Name] = e
		}
		on := catconf.DefaultProjections().Search.Enabled
		if e, ok := env["PROJECTOR_SEARCH_ENABLED"]; ok {
			on = e.Value == "true"
		}
		if !on {
			continue
		}
		u, err := url.Parse(env["ELASTIC_URL"].Value)
		if err != nil || u.Scheme != "https" || u.User != nil {
			out = append(out, fmt.Sprintf("Deployment %s: search is on and ELASTIC_URL is %q: want https://host without credentials in it", d.Name, env["ELASTIC_URL"].Value))
		}
		for _, k := range []string{"ELASTIC_USERNAME", "ELASTIC_PASSWORD"} {
			if e := env[k]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				out = append(out, fmt.Sprintf("Deployment %s: search is on and %s is not from a Secret (secretKeyRef)", d.Name, k))
			}
		}
	}
	return out
}

// ExternalSecrets are the Secrets an operator creates outside git
// (docs/deploy-gke.md); the manifests reference them, no kustomization
// holds them.
var ExternalSecrets = map[string]bool{"eventrelay-elasticsearch": true}

// ReleaseConfigMap names the release the gke overlay renders.
const ReleaseConfigMap = "eventrelay-release"

var releaseRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// MigrationReleaseProblems: the migration Job is named migrate-<release>
// and records the release in EVENTRELAY_RELEASE, the release read from
// ReleaseConfigMap: each release creates its own Job (a Job's pod
// template is immutable) and the audit row names the release. The name
// stays within the 63 characters of the Job's job-name label.
func MigrationReleaseProblems(o *Objects) []string {
	var out []string
	release := ""
	for _, c := range o.ConfigMaps {
		if c.Name == ReleaseConfigMap {
			release = c.Data["EVENTRELAY_RELEASE"]
		}
	}
	if !releaseRE.MatchString(release) {
		return []string{fmt.Sprintf("ConfigMap %s: EVENTRELAY_RELEASE %q, want a release such as v1.2.3 (lower case, digits, '-', '.')", ReleaseConfigMap, release)}
	}
	for _, j := range o.Jobs {
		if want := "migrate-" + release; j.Name != want || len(want) > 63 {
			out = append(out, fmt.Sprintf("Job %s: want the name %s (at most 63 characters): a fixed name makes the next release's apply fail on the immutable pod template", j.Name, want))
		}
		got := ""
		for _, e := range j.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "EVENTRELAY_RELEASE" {
				got = e.Value
			}
		}
		if got != release {
			out = append(out, fmt.Sprintf("Job %s: EVENTRELAY_RELEASE %q, want the release %q", j.Name, got, release))
		}
	}
	return out
}
