// Package check validates deploy/ offline, without a cluster: it renders
// the kustomize base and overlays in process, decodes every object strictly
// into the Kubernetes API types, and enforces the project's policies
// (probes, termination grace >= the daemon's drain as its own config loader
// computes it, a PodDisruptionBudget per Deployment, pinned images,
// non-root, resources), keeps the Config Connector Pub/Sub objects equal to
// configs/pubsub.yaml, runs promtool on the alert rules, checks the Grafana
// dashboard's queries and the systemd units. Run it with make deploy-check.
package check
