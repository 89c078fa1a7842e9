// Package ui is eventrelay's web console as an http.Handler, for a service
// to mount in its own HTTP server (as it mounts package health), or to run
// with `relayctl ui`.
//
// The console shows the outbox (by status, lag, stuck claims, failed rows
// by reason, partitions), projections and dead letters, and runs the
// operator's actions — replay with a dry-run preview, resolve, dead-letter
// republish and purge, seek — through the same code as the relayctl
// commands, so each leaves the same audit record, with the operator as
// the requester.
//
// Safe by default: read-only unless Options.Write; every mutation needs a
// CSRF token; the identity is the local user, or Options.IdentityHeader
// when a trusted proxy (Identity-Aware Proxy:
// X-Goog-Authenticated-User-Email) sets it; responses carry a Content
// Security Policy; the database password is never rendered. Mount it only
// on a loopback address or behind an authenticating proxy.
package ui
