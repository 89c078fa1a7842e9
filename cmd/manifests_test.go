package cmd_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/eventrelay/eventrelay/internal/gpubsub/strict"
)

// manifests are the rendered gke resources and gke overlay
// (deploy/check's render, the real kustomize): what a cluster applies.
type manifests struct {
	objects []map[string]any
}

// renderManifests renders deploy/k8s/gke-resources and
// deploy/k8s/overlays/gke with deploy/check's render command (its own
// module, which holds kustomize). It has no deadline of its own: go run
// builds kustomize first, which takes minutes on a loaded machine.
func renderManifests(t *testing.T) *manifests {
	t.Helper()
	cmd := exec.Command("go", "run", "./cmd/render", "deploy/k8s/gke-resources", "deploy/k8s/overlays/gke")
	cmd.Dir = filepath.Join(repoRoot(t), "deploy", "check")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rendering the manifests: %v\n%s", err, stderr.String())
	}
	m := &manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decoding the rendered manifests: %v", err)
		}
		if o != nil {
			m.objects = append(m.objects, o)
		}
	}
	return m
}

// path walks o along keys (maps only).
func path(o any, keys ...string) any {
	for _, k := range keys {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[k]
	}
	return o
}

func str(o any, keys ...string) string { s, _ := path(o, keys...).(string); return s }

// of is every object of kind.
func (m *manifests) of(kind string) []map[string]any {
	var out []map[string]any
	for _, o := range m.objects {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// container is the app container of Deployment name (named after it).
func (m *manifests) container(t *testing.T, name string) (deployment, container map[string]any) {
	t.Helper()
	for _, d := range m.of("Deployment") {
		if str(d, "metadata", "name") != name {
			continue
		}
		cs, _ := path(d, "spec", "template", "spec", "containers").([]any)
		for _, c := range cs {
			if str(c, "name") == name {
				return d, c.(map[string]any)
			}
		}
	}
	t.Fatalf("no Deployment %s with a container %s in the rendered gke overlay", name, name)
	return nil, nil
}

// member is the Google identity the pods of Deployment name act as:
// their ServiceAccount's Workload Identity annotation.
func (m *manifests) member(t *testing.T, name string) string {
	t.Helper()
	d, _ := m.container(t, name)
	ksa := str(d, "spec", "template", "spec", "serviceAccountName")
	for _, sa := range m.of("ServiceAccount") {
		if str(sa, "metadata", "name") == ksa {
			if gsa := str(sa, "metadata", "annotations", "iam.gke.io/gcp-service-account"); gsa != "" {
				return "serviceAccount:" + gsa
			}
		}
	}
	t.Fatalf("Deployment %s: ServiceAccount %q has no iam.gke.io/gcp-service-account annotation", name, ksa)
	return ""
}

// env is the environment the app container of Deployment name gets from
// plain values (valueFrom entries, secrets and the pod's name, are left
// to the test), and its arguments.
func (m *manifests) env(t *testing.T, name string) (env map[string]string, args []string) {
	t.Helper()
	_, c := m.container(t, name)
	env = map[string]string{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		if v, ok := path(e, "value").(string); ok {
			env[str(e, "name")] = v
		}
	}
	as, _ := c["args"].([]any)
	for _, a := range as {
		args = append(args, a.(string))
	}
	return env, args
}

// iam is the Pub/Sub policy of the IAMPolicyMember objects in project,
// plus the bindings of the operators' row of docs/deploy-gke.md section
// 4 (on the project, as member operator), and the Pub/Sub service agent
// (the member on gcp-sa-pubsub).
func (m *manifests) iam(t *testing.T, project, operator string) *strict.IAM {
	t.Helper()
	policy := &strict.IAM{}
	kinds := map[string]string{"PubSubTopic": "topics", "PubSubSubscription": "subscriptions"}
	for _, b := range m.of("IAMPolicyMember") {
		member, role := str(b, "spec", "member"), str(b, "spec", "role")
		kind, ok := kinds[str(b, "spec", "resourceRef", "kind")]
		if !ok {
			t.Fatalf("IAMPolicyMember %s: resourceRef kind %q not modelled", str(b, "metadata", "name"), str(b, "spec", "resourceRef", "kind"))
		}
		policy.Bindings = append(policy.Bindings, strict.Binding{Member: member, Role: role,
			Resource: "projects/" + project + "/" + kind + "/" + str(b, "spec", "resourceRef", "name")})
		if strings.HasSuffix(member, "@gcp-sa-pubsub.iam.gserviceaccount.com") {
			policy.ServiceAgent = member
		}
	}
	for _, role := range operatorRoles(t) {
		policy.Bindings = append(policy.Bindings, strict.Binding{Member: operator, Role: role, Resource: "projects/" + project})
	}
	return policy
}

// operatorRoles are the Pub/Sub roles docs/deploy-gke.md section 4 grants
// the operators running relayctl.
func operatorRoles(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), deployGKEDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| operators running `relayctl`") {
			if roles := regexp.MustCompile(`roles/pubsub\.[a-z]+`).FindAllString(line, -1); len(roles) > 0 {
				return roles
			}
		}
	}
	t.Fatalf("%s section 4: no operators row with a roles/pubsub role", deployGKEDoc)
	return nil
}
