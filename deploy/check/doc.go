// Package check validates deploy/ offline, without a cluster: it renders
// the kustomize base, the overlays and gke-resources in process, decodes
// every object strictly into its API type, and enforces the project's
// policies (probes, termination grace >= the daemon's drain as its own
// config loader computes it, readiness timeout above the check budget, a
// PodDisruptionBudget per Deployment, zone spread, pinned images and
// digests on GKE, non-root, resources and GOMEMLIMIT, NetworkPolicy, Pod
// Security labels, rollout phase labels, a monitor scraping every
// Deployment, the HPA's metric being one Managed Prometheus has), keeps the
// Config Connector objects apart from the apps, the topics and
// subscriptions abandoned on delete (the IAM bindings and alert policies
// not), never expiring and equal to configs/pubsub.yaml, an alert policy on
// each subscription's backlog and oldest unacked message, the GKE specifics
// of gkepolicies.go (Autopilot's scrape namespace, one cluster's HPA metric,
// Elasticsearch credentials, a migration Job per release), runs
// scripts/rollout.sh against a fake API server, runs promtool on the alert
// rules, checks the rules' aggregation and jobs, the Grafana dashboard's
// queries and the systemd units. policies.go holds the policies; each is
// also run on a deliberately broken copy of the manifests. Run it with
// make deploy-check.
package check
