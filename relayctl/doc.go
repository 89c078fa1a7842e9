// Package relayctl is eventrelay's admin command set as a library, so a
// service ships its own relayctl binary with its own hooks: outbox status,
// failed rows and replays, dead-letter triage (`dlq show` decodes any
// protobuf envelope given a descriptor set), Pub/Sub seeks, snapshots and
// resource setup, guarded migrations, the web console `ui` (package
// relayctl/ui mounts it in a service's own HTTP server), and the
// service-specific commands `rebuild`, `rebuild --reindex` and `verify`,
// which call the service's hooks (package relayctl/hook).
//
// A service's main is a few lines:
//
//	func main() {
//		os.Exit(relayctl.Run(relayctl.Hooks{ // Main with os.Args, stdout, stderr, SIGINT/SIGTERM
//			Schema:    "orders",                // default of --schema
//			Rebuilder: ordersadmin.Rebuilder{}, // orders rows -> restatement events
//			Verifier:  ordersadmin.Verifier,    // orders vs order_summaries (hook.TableVerifier)
//			Decoder:   hook.DecoderFunc(ordersevents.Codec.DecodeEnvelope), // dlq show
//		}))
//	}
//
// A hook left nil makes its command answer, with exit code 2, that this
// binary has no such hook for the service. Hooks.Schema is the service's
// schema, the default of --schema (no schema is assumed otherwise).
//
// Exit codes (stable, for scripts):
//
//	0  success
//	1  a problem was found (drift, failed rows, messages in a DLQ when asked to
//	   check) — the command itself worked
//	2  usage or configuration error (bad flag, missing --by/--why, guard
//	   mismatch, no hook for the command); nothing was changed
//	3  runtime failure (database or Pub/Sub unreachable, a query failed)
//
// Mutating commands print what they will do before doing it and are audited:
// replays in outbox_replays, everything else in admin_audit.
package relayctl
