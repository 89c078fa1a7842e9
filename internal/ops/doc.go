// Package ops is the operational HTTP surface shared by the daemons:
// /healthz (every registered loop is ticking), /readyz (not draining and
// every dependency check passes) and /metrics (Prometheus text), served by
// a Kratos HTTP server so it starts and stops with the app.
package ops
