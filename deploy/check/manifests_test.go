package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var kustomizations = []string{"deploy/k8s/base", "deploy/k8s/overlays/local", "deploy/k8s/overlays/gke"}

func render(t *testing.T, dir string) *Objects {
	t.Helper()
	m, err := Render(dir)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Decode(m)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return o
}

// TestManifestPolicies renders each kustomization and checks every
// workload against the project's deployment policy.
func TestManifestPolicies(t *testing.T) {
	for _, dir := range kustomizations {
		t.Run(dir, func(t *testing.T) {
			o := render(t, dir)
			if len(o.Deployments) != 3 || len(o.Jobs) != 1 {
				t.Fatalf("want the publisher, projector and catalog Deployments and the migrate Job, got %d Deployments, %d Jobs", len(o.Deployments), len(o.Jobs))
			}
			for _, d := range o.Deployments {
				for _, p := range podProblems(d.Name, d.Spec.Template.Spec) {
					t.Errorf("Deployment %s: %s", d.Name, p)
				}
				c := d.Spec.Template.Spec.Containers[0]
				if c.StartupProbe == nil || c.LivenessProbe == nil || c.ReadinessProbe == nil {
					t.Errorf("Deployment %s: container %s needs startup, liveness and readiness probes", d.Name, c.Name)
				}
				if d.Spec.Strategy.Type != "RollingUpdate" || d.Spec.Strategy.RollingUpdate == nil ||
					d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
					t.Errorf("Deployment %s: want a RollingUpdate with maxUnavailable 0", d.Name)
				}
				if n := pdbsCovering(o, d.Spec.Template.Labels); n != 1 {
					t.Errorf("Deployment %s: %d PodDisruptionBudgets select its pods, want 1", d.Name, n)
				}
				if d.Name == "publisher" || d.Name == "projector" {
					if n := minReplicas(o, d.Name, d.Spec.Replicas); n < 2 {
						t.Errorf("Deployment %s: want >= 2 replicas (its replicas, or its HPA's minReplicas), have %d", d.Name, n)
					}
				}
			}
			for _, j := range o.Jobs {
				for _, p := range podProblems(j.Name, j.Spec.Template.Spec) {
					t.Errorf("Job %s: %s", j.Name, p)
				}
				if j.Spec.ActiveDeadlineSeconds == nil || j.Labels["app.kubernetes.io/component"] != "migration" {
					t.Errorf("Job %s: want activeDeadlineSeconds and the label app.kubernetes.io/component=migration (phase 1 of docs/rollout.md selects it)", j.Name)
				}
				if args := strings.Join(j.Spec.Template.Spec.Containers[0].Args, " "); !strings.HasPrefix(args, "migrate up -by ") || !strings.Contains(args, " -why ") {
					t.Errorf("Job %s: args %q, want relayctl migrate up -by ... -why ...", j.Name, args)
				}
			}
			for _, h := range o.HPAs {
				if !hasDeployment(o, h.Spec.ScaleTargetRef.Name) {
					t.Errorf("HPA %s scales unknown Deployment %s", h.Name, h.Spec.ScaleTargetRef.Name)
				}
				if h.Spec.ScaleTargetRef.Name == "publisher" && (h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2) {
					t.Errorf("HPA publisher: minReplicas must keep >= 2 replicas")
				}
			}
		})
	}
}

// podProblems is the policy every pod template must meet.
func podProblems(name string, spec corev1.PodSpec) []string {
	var out []string
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	if spec.ServiceAccountName == "" {
		out = append(out, "no serviceAccountName (Workload Identity binds per ServiceAccount)")
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		img := c.Image
		if i := strings.LastIndex(img, "/"); i >= 0 {
			img = img[i+1:]
		}
		if !strings.Contains(img, ":") && !strings.Contains(c.Image, "@sha256:") || strings.HasSuffix(c.Image, ":latest") {
			out = append(out, fmt.Sprintf("container %s: image %q must be pinned (a tag other than latest, or a digest)", c.Name, c.Image))
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
			out = append(out, fmt.Sprintf("container %s: needs cpu and memory requests and a memory limit", c.Name))
		}
		sc := c.SecurityContext
		if !podNonRoot && (sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			out = append(out, fmt.Sprintf("container %s: runAsNonRoot is not set (pod or container)", c.Name))
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			out = append(out, fmt.Sprintf("container %s: allowPrivilegeEscalation must be false", c.Name))
		}
	}
	return out
}

func pdbsCovering(o *Objects, podLabels map[string]string) int {
	n := 0
	for _, p := range o.PDBs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err == nil && !sel.Empty() && sel.Matches(labels.Set(podLabels)) {
			n++
		}
	}
	return n
}

// minReplicas is the least replica count of Deployment name: its HPA's
// minReplicas when one scales it, else its replicas (default 1).
func minReplicas(o *Objects, name string, replicas *int32) int32 {
	for _, h := range o.HPAs {
		if h.Spec.ScaleTargetRef.Name == name {
			if h.Spec.MinReplicas == nil {
				return 1
			}
			return *h.Spec.MinReplicas
		}
	}
	if replicas == nil {
		return 1
	}
	return *replicas
}

func hasDeployment(o *Objects, name string) bool {
	for _, d := range o.Deployments {
		if d.Name == name {
			return true
		}
	}
	return false
}

// TestTerminationGraceCoversDrain fails when a daemon's drain, as its own
// configuration loader computes it from its defaults and the environment
// its Deployment sets, plus the preStop sleep and StopMargin, outgrows the
// Deployment's terminationGracePeriodSeconds (Kubernetes would SIGKILL it
// mid-drain). It also checks the probes hit the port the daemon listens on.
func TestTerminationGraceCoversDrain(t *testing.T) {
	for _, dir := range kustomizations[1:] { // the base has no database secret
		t.Run(dir, func(t *testing.T) {
			o := render(t, dir)
			for _, d := range o.Deployments {
				spec := d.Spec.Template.Spec
				c := spec.Containers[0]
				env, err := containerEnv(o, c)
				if err != nil {
					t.Fatalf("Deployment %s: %v", d.Name, err)
				}
				dm, err := LoadDaemon(d.Name, "", env)
				if err != nil {
					t.Fatalf("Deployment %s: %v", d.Name, err)
				}
				need := dm.Drain + preStopSleep(c) + StopMargin
				if spec.TerminationGracePeriodSeconds == nil {
					t.Errorf("Deployment %s: no terminationGracePeriodSeconds (default 30s), need >= %s", d.Name, need)
				} else if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace < need {
					t.Errorf("Deployment %s: terminationGracePeriodSeconds %s < drain %s + preStop %s + margin %s",
						d.Name, grace, dm.Drain, preStopSleep(c), StopMargin)
				}
				for probe, want := range map[*corev1.Probe]string{c.StartupProbe: "/healthz", c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
					if probe == nil || probe.HTTPGet == nil {
						continue // reported by TestManifestPolicies
					}
					if probe.HTTPGet.Path != want {
						t.Errorf("Deployment %s: probe path %s, want %s", d.Name, probe.HTTPGet.Path, want)
					}
					if port := portNumber(c, probe.HTTPGet.Port.String()); port != dm.HTTPPort {
						t.Errorf("Deployment %s: probe port %s is %d, the daemon listens on %d", d.Name, probe.HTTPGet.Port.String(), port, dm.HTTPPort)
					}
				}
			}
		})
	}
}

func preStopSleep(c corev1.Container) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	return time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
}

// containerEnv resolves a container's environment from the rendered
// objects: literals, Secret keys and pod fields.
func containerEnv(o *Objects, c corev1.Container) (func(string) (string, bool), error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			v, ok := secretValue(o, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			if !ok && ExternalSecrets[e.ValueFrom.SecretKeyRef.Name] {
				v, ok = "from-secret-"+e.ValueFrom.SecretKeyRef.Key, true
			}
			if !ok {
				return nil, fmt.Errorf("env %s: secret %s key %s is not in the kustomization", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil:
			env[e.Name] = "field-" + e.ValueFrom.FieldRef.FieldPath
		default:
			return nil, fmt.Errorf("env %s: unsupported valueFrom", e.Name)
		}
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }, nil
}

func secretValue(o *Objects, name, key string) (string, bool) {
	for _, s := range o.Secrets {
		if s.Name == name {
			if v, ok := s.Data[key]; ok {
				return string(v), true
			}
			if v, ok := s.StringData[key]; ok {
				return v, true
			}
		}
	}
	return "", false
}
