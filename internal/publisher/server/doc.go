// Package server holds the publisher's Kratos transport servers: the relay
// loop (RelayServer) and the operational HTTP server (/healthz, /readyz,
// /metrics), with the readiness probes of Postgres and Pub/Sub.
package server
