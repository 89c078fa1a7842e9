// Package health is the operational HTTP surface of eventrelay's loops:
// /healthz (every registered loop is ticking), /readyz (not draining and
// every dependency check passes) and /metrics (Prometheus text).
//
// A service that embeds the relay or the projector passes one *Health to
// them and mounts Handler on its own Kratos HTTP server (or uses NewServer
// for a dedicated port), so its probes cover eventrelay's loops next to its
// own.
package health
