// Package e2e runs eventrelay the way its users run it: separate processes
// (catalog, publishers, projector, the Elasticsearch test server), a private
// Postgres and the real Pub/Sub emulator, and drives and measures them.
//
// It is the engine of `make demo` (cmd/relaydemo) and of the fault suite
// (`make e2e`, the tests in this package behind the "e2e" build tag):
//
//   - Supervisor/Proc start each process in its own process group with its
//     output in a log file, and stop (SIGTERM, then SIGKILL after a grace
//     period), kill, pause and resume whole groups, so nothing is left behind;
//   - Stack brings the system up in dependency order and knows each daemon's
//     configuration (environment overrides of configs/*.yaml);
//   - Workload drives creates, updates and deletes through the catalog's
//     HTTP API at a target rate;
//   - Stats reads progress straight from Postgres (outbox states, inbox
//     rows, commit-to-projected latency) for the progress line and summary;
//   - OrderChecker is an independent ordered subscription that records the
//     first-seen version of every aggregate and counts order violations.
//
// Nothing here is a mock: when the emulator is not installed the harness
// runs an embedded pstest server as a separate process and says so.
package e2e
