// Package command implements eventrelay's admin command set: one file per
// command group, all reached through Run, which the public package relayctl
// (relayctl.Main), the binaries and the tests call alike. What depends on
// the service (rebuild, verify, the envelope dlq show decodes by default)
// comes in through the hooks of package relayctl/hook; exit codes are
// documented in package relayctl.
//
// Mutating commands print what they will do before doing it and are audited:
// replays in outbox_replays, everything else in admin_audit.
package command
