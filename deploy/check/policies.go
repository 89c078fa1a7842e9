package check

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/eventrelay/eventrelay/health"
)

// The policies a rendered kustomization must meet on GKE. Each returns the
// problems it finds (none: the policy holds); the tests run them on the
// real manifests and on deliberately broken copies.

// NameLabel is the pod label naming the daemon; it is also the scrape job.
const NameLabel = "app.kubernetes.io/name"

func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

func hasPort(d *appsv1.Deployment, port string) bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port || fmt.Sprint(p.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

// MonitorProblems: every Deployment is scraped by a PodMonitoring whose
// selector matches its pods, whose endpoint port exists in the pod, and
// whose name (the job label of its series) is the pod's NameLabel, which
// the alerts use as job.
func MonitorProblems(o *Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		podLabels := d.Spec.Template.Labels
		covered := false
		for _, m := range o.PodMonitorings {
			if !selects(&m.Spec.Selector, podLabels) {
				continue
			}
			for _, e := range m.Spec.Endpoints {
				if !hasPort(d, e.Port.String()) {
					out = append(out, fmt.Sprintf("PodMonitoring %s: port %s is not a port of Deployment %s", m.Name, e.Port.String(), d.Name))
					continue
				}
				if m.Name != podLabels[NameLabel] {
					out = append(out, fmt.Sprintf("PodMonitoring %s: its job label would be %q, the alerts expect job=%q (the pods' %s)", m.Name, m.Name, podLabels[NameLabel], NameLabel))
					continue
				}
				covered = true
			}
		}
		if !covered {
			out = append(out, fmt.Sprintf("Deployment %s: no PodMonitoring scrapes its pods (selector matching its labels, an existing port)", d.Name))
		}
	}
	return out
}

// PodMonitorProblems is MonitorProblems for Prometheus Operator PodMonitors:
// the job label comes from the pod label jobLabel names.
func PodMonitorProblems(deps []*appsv1.Deployment, mons []*PodMonitor) []string {
	var out []string
	for _, d := range deps {
		covered := false
		for _, m := range mons {
			if !selects(&m.Spec.Selector, d.Spec.Template.Labels) {
				continue
			}
			if m.Spec.JobLabel != NameLabel {
				out = append(out, fmt.Sprintf("PodMonitor %s: jobLabel %q, want %s (the alerts' job)", m.Name, m.Spec.JobLabel, NameLabel))
				continue
			}
			for _, e := range m.Spec.PodMetricsEndpoints {
				if hasPort(d, e.Port) {
					covered = true
				} else {
					out = append(out, fmt.Sprintf("PodMonitor %s: port %s is not a port of Deployment %s", m.Name, e.Port, d.Name))
				}
			}
		}
		if !covered {
			out = append(out, fmt.Sprintf("Deployment %s: no PodMonitor scrapes its pods", d.Name))
		}
	}
	return out
}

var gmpMetricRE = regexp.MustCompile(`^prometheus\.googleapis\.com\|([a-zA-Z_:][a-zA-Z0-9_:]*)\|(gauge|counter|summary|histogram|unknown)$`)

// HPAProblems: a Deployment scaled by an HPA has no replicas field (an
// apply would reset the scale); an external metric from Managed Service
// for Prometheus is prometheus.googleapis.com|<name>|gauge where <name> is
// a recording rule of the kustomization's Rules over exported metrics, or
// an exported metric that is not global (an external metric sums the
// replicas' series).
func HPAProblems(o *Objects, exported map[string]Metric) []string {
	var out []string
	records := map[string]string{}
	for _, r := range o.Rules {
		for _, g := range r.Spec.Groups {
			for _, rule := range g.Rules {
				if rule.Record != "" {
					records[rule.Record] = rule.Expr
				}
			}
		}
	}
	for _, h := range o.HPAs {
		for _, d := range o.Deployments {
			if d.Name == h.Spec.ScaleTargetRef.Name && d.Spec.Replicas != nil {
				out = append(out, fmt.Sprintf("Deployment %s: replicas %d set under HPA %s (every apply resets the scale)", d.Name, *d.Spec.Replicas, h.Name))
			}
		}
		for _, m := range h.Spec.Metrics {
			if m.External == nil || !strings.HasPrefix(m.External.Metric.Name, "prometheus.googleapis.com") {
				continue
			}
			name := m.External.Metric.Name
			sm := gmpMetricRE.FindStringSubmatch(name)
			switch {
			case sm == nil:
				out = append(out, fmt.Sprintf("HPA %s: %s is not prometheus.googleapis.com|<metric>|<kind>", h.Name, name))
			case records[sm[1]] != "":
				if sm[2] != "gauge" {
					out = append(out, fmt.Sprintf("HPA %s: recording rule %s is written as a gauge, not %s", h.Name, sm[1], sm[2]))
				}
				for _, p := range QueryProblems(records[sm[1]], exported) {
					out = append(out, fmt.Sprintf("HPA %s: recording rule %s: %s", h.Name, sm[1], p))
				}
			default:
				e, ok := exported[sm[1]]
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("HPA %s: %s: %s is neither a recording rule of the Rules nor an exported metric (Managed Prometheus would never have it)", h.Name, name, sm[1]))
				case e.Global:
					out = append(out, fmt.Sprintf("HPA %s: %s is global; an external metric sums the replicas' equal series (scale on a max() recording rule)", h.Name, sm[1]))
				}
			}
		}
	}
	return out
}

// SpreadProblems: every Deployment spreads its pods over zones; every PDB
// keeps at least one pod available.
func SpreadProblems(o *Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		zone := false
		for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
			if c.TopologyKey == corev1.LabelTopologyZone && c.LabelSelector != nil && selects(c.LabelSelector, d.Spec.Template.Labels) {
				zone = true
			}
		}
		if !zone {
			out = append(out, fmt.Sprintf("Deployment %s: no topologySpreadConstraint over %s selecting its pods", d.Name, corev1.LabelTopologyZone))
		}
	}
	for _, p := range o.PDBs {
		if p.Spec.MinAvailable == nil || p.Spec.MinAvailable.IntValue() < 1 {
			out = append(out, fmt.Sprintf("PodDisruptionBudget %s: want minAvailable >= 1 (a budget that allows 0 available lets a drain stop the daemon)", p.Name))
		}
	}
	return out
}

// ReadyCheckBudget is how long /readyz may take: health.Health runs the
// checks in parallel, each bounded by its timeout. Measured on the default
// Health (the projector's); the publisher (readyTimeout) and the catalog
// (data.NewHealth) set the same 2 s.
func ReadyCheckBudget() time.Duration {
	h := health.NewHealth(0)
	h.AddCheck("blocked", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	start := time.Now()
	h.Ready(context.Background())
	return time.Since(start).Round(100 * time.Millisecond)
}

// ReadinessProblems: every readiness probe waits longer than the checks'
// budget, so a slow dependency reads as its named failure, not a timeout.
func ReadinessProblems(o *Objects, budget time.Duration) []string {
	var out []string
	for _, d := range o.Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		if c.ReadinessProbe == nil {
			continue // TestManifestPolicies reports it
		}
		t := c.ReadinessProbe.TimeoutSeconds
		if t == 0 {
			t = 1 // the Kubernetes default
		}
		if time.Duration(t)*time.Second <= budget {
			out = append(out, fmt.Sprintf("Deployment %s: readiness timeoutSeconds %d, want above the checks' budget %s", d.Name, t, budget))
		}
	}
	return out
}

// NetworkPolicyProblems: ingress is denied by default, and each
// Deployment's scrape port is allowed by a policy that selects its pods.
func NetworkPolicyProblems(o *Objects) []string {
	var out []string
	deny := false
	for _, p := range o.NetworkPolicies {
		if len(p.Spec.PodSelector.MatchLabels) == 0 && len(p.Spec.PodSelector.MatchExpressions) == 0 &&
			len(p.Spec.Ingress) == 0 && contains(p.Spec.PolicyTypes, "Ingress") {
			deny = true
		}
	}
	if !deny {
		out = append(out, "no default-deny ingress NetworkPolicy (empty podSelector, policyTypes [Ingress], no rules)")
	}
	for _, d := range o.Deployments {
		allowed := false
		for _, p := range o.NetworkPolicies {
			sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				continue
			}
			for _, r := range p.Spec.Ingress {
				for _, port := range r.Ports {
					if port.Port != nil && (port.Port.String() == "http" || port.Port.IntValue() == portNumber(d.Spec.Template.Spec.Containers[0], "http")) {
						allowed = true
					}
				}
			}
		}
		if !allowed {
			out = append(out, fmt.Sprintf("Deployment %s: no NetworkPolicy selecting its pods allows its http (metrics) port", d.Name))
		}
	}
	return out
}

func contains[T ~string](s []T, v string) bool {
	for _, x := range s {
		if string(x) == v {
			return true
		}
	}
	return false
}

// NamespaceProblems: every Namespace enforces the restricted Pod Security
// Standard.
func NamespaceProblems(o *Objects) []string {
	var out []string
	for _, n := range o.Namespaces {
		if n.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			out = append(out, fmt.Sprintf("Namespace %s: label pod-security.kubernetes.io/enforce=restricted missing", n.Name))
		}
	}
	return out
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// DigestProblems: every image (the eventrelay daemons' and the sidecars')
// is referenced by digest: what was tested is what runs.
func DigestProblems(o *Objects) []string {
	var out []string
	check := func(kind, name string, spec corev1.PodSpec) {
		for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
			if !digestRE.MatchString(c.Image) {
				out = append(out, fmt.Sprintf("%s %s: container %s image %q is not by digest (@sha256:...)", kind, name, c.Name, c.Image))
			}
		}
	}
	for _, d := range o.Deployments {
		check("Deployment", d.Name, d.Spec.Template.Spec)
	}
	for _, j := range o.Jobs {
		check("Job", j.Name, j.Spec.Template.Spec)
	}
	return out
}

// ConfigConnectorProblems: Config Connector objects live only in the
// resources kustomization (apps false); the topics and subscriptions are
// abandoned on delete (their messages outlive the object), the IAM
// bindings and alert policies are not (removing one from git revokes or
// removes it); every subscription never expires.
func ConfigConnectorProblems(o *Objects, apps bool) []string {
	var out []string
	for _, m := range o.ConfigConnector {
		if apps {
			out = append(out, fmt.Sprintf("Config Connector object %s is in an apps kustomization: deleting or pruning the apps would delete it (move it to deploy/k8s/gke-resources)", m.Name))
		}
	}
	var data, revocable []*metav1.ObjectMeta
	for _, t := range o.Topics {
		data = append(data, &t.ObjectMeta)
	}
	for _, s := range o.Subscriptions {
		data = append(data, &s.ObjectMeta)
	}
	for _, m := range o.IAMMembers {
		revocable = append(revocable, &m.ObjectMeta)
	}
	for _, p := range o.AlertPolicies {
		revocable = append(revocable, &p.ObjectMeta)
	}
	for _, m := range data {
		if m.Annotations[DeletionPolicyAnnotation] != "abandon" {
			out = append(out, fmt.Sprintf("Config Connector object %s: annotation %s: abandon missing (deleting the object would delete the Google Cloud resource)", m.Name, DeletionPolicyAnnotation))
		}
	}
	for _, m := range revocable {
		if v := m.Annotations[DeletionPolicyAnnotation]; v == "abandon" {
			out = append(out, fmt.Sprintf("Config Connector object %s: annotation %s: %s (removing it from git must revoke it in Google Cloud; leave the default)", m.Name, DeletionPolicyAnnotation, v))
		}
	}
	for _, s := range o.Subscriptions {
		if s.Spec.ExpirationPolicy == nil || s.Spec.ExpirationPolicy.TTL != "" {
			out = append(out, fmt.Sprintf("PubSubSubscription %s: want expirationPolicy.ttl \"\" (never expires; the default deletes it after 31 idle days)", s.Name))
		}
	}
	return out
}

var byRE = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)

// AggregationProblems: an alert expression aggregates, and every
// aggregation keeps cluster and namespace (one rule set, many clusters).
func AggregationProblems(expr string) []string {
	var out []string
	ms := byRE.FindAllStringSubmatch(expr, -1)
	if len(ms) == 0 {
		return []string{"no aggregation by (cluster, namespace, ...)"}
	}
	for _, m := range ms {
		if strings.HasPrefix(strings.TrimSpace(m[0]), "without") {
			continue
		}
		have := map[string]bool{}
		for _, l := range strings.Split(m[1], ",") {
			have[strings.TrimSpace(l)] = true
		}
		if !have["cluster"] || !have["namespace"] {
			out = append(out, fmt.Sprintf("%q drops cluster or namespace", strings.TrimSpace(m[0])))
		}
	}
	return out
}

var jobRE = regexp.MustCompile(`\bjob\s*=(~?)\s*"([^"]*)"`)

// JobProblems: every job an alert names is scraped under that name.
func JobProblems(expr string, jobs map[string]bool) []string {
	var out []string
	for _, m := range jobRE.FindAllStringSubmatch(expr, -1) {
		names := []string{m[2]}
		if m[1] == "~" {
			names = strings.Split(m[2], "|")
		}
		for _, n := range names {
			if !jobs[n] {
				out = append(out, fmt.Sprintf("job %q is not a scrape job (monitors: %s)", n, strings.Join(sortedKeys(jobs), ", ")))
			}
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ComponentLabel selects the objects of one rollout phase (docs/rollout.md:
// migration, then publisher and catalog, then projector).
const ComponentLabel = "app.kubernetes.io/component"

// PhaseProblems: every object of a phase carries ComponentLabel with the
// right value: the Job "migration", each Deployment, its PDB, HPA,
// PodMonitoring and ServiceAccount the Deployment's name. An object
// without it would be applied in the wrong phase or in none.
func PhaseProblems(o *Objects) []string {
	var out []string
	want := func(kind, name string, l map[string]string, comp string) {
		if l[ComponentLabel] != comp {
			out = append(out, fmt.Sprintf("%s %s: label %s=%q, want %q (its rollout phase)", kind, name, ComponentLabel, l[ComponentLabel], comp))
		}
	}
	for _, j := range o.Jobs {
		want("Job", j.Name, j.Labels, "migration")
		for _, s := range o.ServiceAccounts {
			if s.Name == j.Spec.Template.Spec.ServiceAccountName {
				want("ServiceAccount", s.Name, s.Labels, "migration")
			}
		}
	}
	for _, d := range o.Deployments {
		want("Deployment", d.Name, d.Labels, d.Name)
		for _, p := range o.PDBs {
			if selects(p.Spec.Selector, d.Spec.Template.Labels) {
				want("PodDisruptionBudget", p.Name, p.Labels, d.Name)
			}
		}
		for _, m := range o.PodMonitorings {
			if selects(&m.Spec.Selector, d.Spec.Template.Labels) {
				want("PodMonitoring", m.Name, m.Labels, d.Name)
			}
		}
		for _, s := range o.ServiceAccounts {
			if s.Name == d.Spec.Template.Spec.ServiceAccountName {
				want("ServiceAccount", s.Name, s.Labels, d.Name)
			}
		}
	}
	for _, h := range o.HPAs {
		want("HorizontalPodAutoscaler", h.Name, h.Labels, h.Spec.ScaleTargetRef.Name)
	}
	return out
}

var selectorRE = regexp.MustCompile(`\b((?:outbox|projector|eventrelay)_[a-zA-Z0-9_]+)(\{[^}]*\})?`)

// DashboardSelectorProblems: every eventrelay series a panel reads is
// filtered by the dashboard's cluster and namespace variables.
func DashboardSelectorProblems(expr string) []string {
	var out []string
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		if !strings.Contains(m[2], `cluster=~"$cluster"`) || !strings.Contains(m[2], `namespace=~"$namespace"`) {
			out = append(out, fmt.Sprintf("%s%s is not filtered by cluster=~\"$cluster\" and namespace=~\"$namespace\"", m[1], m[2]))
		}
	}
	return out
}

var memLimitRE = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB)?$`)

// GoMemLimitProblems: every daemon sets GOMEMLIMIT between 70% and 95% of
// its container's memory limit, so the runtime collects before the kernel
// kills it, and leaves room for non-heap memory.
func GoMemLimitProblems(o *Objects) []string {
	var out []string
	for _, d := range o.Deployments {
		c := d.Spec.Template.Spec.Containers[0]
		limit := c.Resources.Limits.Memory().Value()
		v := ""
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				v = e.Value
			}
		}
		m := memLimitRE.FindStringSubmatch(v)
		if m == nil {
			out = append(out, fmt.Sprintf("Deployment %s: GOMEMLIMIT %q, want a size such as 460MiB", d.Name, v))
			continue
		}
		var n int64
		fmt.Sscan(m[1], &n)
		n <<= map[string]int{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
		if limit == 0 || n < limit*70/100 || n > limit*95/100 {
			out = append(out, fmt.Sprintf("Deployment %s: GOMEMLIMIT %s is not 70-95%% of the memory limit %s", d.Name, v, c.Resources.Limits.Memory()))
		}
	}
	return out
}

// PubSubIAMProblems: every binding names a topic or subscription declared
// beside it, and dead-lettering works: for each subscription with a
// dead-letter policy, the Pub/Sub service agent is subscriber on it and
// publisher on its dead-letter topic, and so is the projector's service
// account (it dead-letters unappliable messages itself) on that topic
// while being subscriber on the subscription.
func PubSubIAMProblems(o *Objects) []string {
	var out []string
	declared := map[string]bool{}
	for _, t := range o.Topics {
		declared["PubSubTopic/"+t.Name] = true
	}
	for _, s := range o.Subscriptions {
		declared["PubSubSubscription/"+s.Name] = true
	}
	has := map[string]bool{} // kind/name|role|member class
	for _, m := range o.IAMMembers {
		ref := m.Spec.ResourceRef.Kind + "/" + m.Spec.ResourceRef.Name
		if !declared[ref] {
			out = append(out, fmt.Sprintf("IAMPolicyMember %s: %s is not declared in this kustomization", m.Name, ref))
		}
		who := m.Spec.Member
		switch {
		case strings.HasSuffix(who, "@gcp-sa-pubsub.iam.gserviceaccount.com"):
			who = "pubsub-agent"
		case strings.HasPrefix(who, "serviceAccount:eventrelay-projector@"):
			who = "projector"
		}
		has[ref+"|"+m.Spec.Role+"|"+who] = true
	}
	for _, s := range o.Subscriptions {
		if s.Spec.DeadLetterPolicy == nil {
			continue
		}
		dlq := "PubSubTopic/" + s.Spec.DeadLetterPolicy.DeadLetterTopicRef.Name
		for _, need := range []string{
			"PubSubSubscription/" + s.Name + "|roles/pubsub.subscriber|pubsub-agent",
			dlq + "|roles/pubsub.publisher|pubsub-agent",
			"PubSubSubscription/" + s.Name + "|roles/pubsub.subscriber|projector",
			dlq + "|roles/pubsub.publisher|projector",
		} {
			if !has[need] {
				out = append(out, fmt.Sprintf("subscription %s: binding %s missing", s.Name, strings.ReplaceAll(need, "|", " ")))
			}
		}
	}
	return out
}

// portNumber is the number of c's port named (or numbered) port; -1 when
// it has none.
func portNumber(c corev1.Container, port string) int {
	for _, p := range c.Ports {
		if p.Name == port || fmt.Sprint(p.ContainerPort) == port {
			return int(p.ContainerPort)
		}
	}
	return -1
}
