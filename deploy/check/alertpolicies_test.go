package check

import (
	"reflect"
	"testing"
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
		writeManifest(t, alertsManifest, "# Generated from configs/pubsub.yaml by deploy/check (go test -run TestAlertPoliciesMatchConfig -update); do not edit.\n"+
			"# Cloud Monitoring alert policies on each subscription's backlog and oldest unacked message (docs/deploy-gke.md section 7).\n", anySlice(want))
	}
	o := render(t, gkeResources)
	report(t, gkeResources, SubscriptionAlertProblems(o, res))
	for _, p := range o.AlertPolicies {
		unrender(&p.ObjectMeta)
	}
	if !reflect.DeepEqual(o.AlertPolicies, want) {
		t.Errorf("%s differs from what configs/pubsub.yaml calls for:\n got %s\nwant %s\n(run go test -run TestAlertPoliciesMatchConfig -update)", alertsManifest, dump(o.AlertPolicies), dump(want))
	}
	if len(want) != 2*len(res.Subscriptions) || len(deadLetterSubscriptions(res)) == 0 {
		t.Errorf("%d policies for %d subscriptions (%d dead-letter): want two each, dead-letter subscriptions included", len(want), len(res.Subscriptions), len(deadLetterSubscriptions(res)))
	}
}
