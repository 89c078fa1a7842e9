package check

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

const alertsManifest = "deploy/k8s/gke-resources/pubsub-alerts.yaml"

// TestAlertPoliciesMatchConfig fails when the Cloud Monitoring alert
// policies of deploy/k8s/gke-resources differ from those configs/pubsub.yaml
// calls for (go test -run TestAlertPoliciesMatchConfig -update regenerates
// them), and when a subscription of configs/pubsub.yaml lacks a policy on
// its backlog or its oldest unacked message.
func TestAlertPoliciesMatchConfig(t *testing.T) {
	res, err := LoadPubSubYAML()
	if err != nil {
		t.Fatal(err)
	}
	want := ExpectedAlertPolicies(res)
	if *update {
		var buf bytes.Buffer
		buf.WriteString("# Generated from configs/pubsub.yaml by deploy/check (go test -run TestAlertPoliciesMatchConfig -update); do not edit.\n")
		buf.WriteString("# Cloud Monitoring alert policies on each subscription's backlog and oldest unacked message (docs/deploy-gke.md section 7).\n")
		for _, p := range want {
			b, err := yaml.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			buf.WriteString("---\n")
			buf.Write(bytes.ReplaceAll(b, []byte("  creationTimestamp: null\n"), nil))
		}
		if err := os.WriteFile(filepath.Join(Repo(), alertsManifest), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := render(t, gkeResources)
	report(t, gkeResources, SubscriptionAlertProblems(o, res))
	for _, p := range o.AlertPolicies {
		p.Namespace = ""
		delete(p.Labels, "app.kubernetes.io/part-of")
		if len(p.Labels) == 0 {
			p.Labels = nil
		}
	}
	if !reflect.DeepEqual(o.AlertPolicies, want) {
		t.Errorf("%s differs from what configs/pubsub.yaml calls for:\n got %s\nwant %s\n(run go test -run TestAlertPoliciesMatchConfig -update)", alertsManifest, dump(o.AlertPolicies), dump(want))
	}
	if len(want) != 2*len(res.Subscriptions) || len(deadLetterSubscriptions(res)) == 0 {
		t.Errorf("%d policies for %d subscriptions (%d dead-letter): want two each, dead-letter subscriptions included", len(want), len(res.Subscriptions), len(deadLetterSubscriptions(res)))
	}
}
