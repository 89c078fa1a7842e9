// Package opstest holds test helpers for the daemons: reading Prometheus
// metrics, building a daemon binary once per test process, and free ports.
package opstest
