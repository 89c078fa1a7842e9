// Package relayctl implements the eventrelay admin CLI (cmd/relayctl): one
// file per command group, all reached through Run, which the binary and the
// tests call alike.
//
// Exit codes (stable, for scripts):
//
//	0  success
//	1  a problem was found (drift, failed rows, messages in a DLQ when asked to
//	   check) — the command itself worked
//	2  usage or configuration error (bad flag, missing --by/--why, guard
//	   mismatch); nothing was changed
//	3  runtime failure (database or Pub/Sub unreachable, a query failed)
//
// Mutating commands print what they will do before doing it and are audited:
// replays in outbox_replays, everything else in admin_audit.
package relayctl
