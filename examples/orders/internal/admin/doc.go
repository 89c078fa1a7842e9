// Package admin holds the orders service's relayctl hooks: Rebuilder
// (orders rows -> restatement events through the outbox), Verifier
// (eventrelay's ready-made TableVerifier: orders against order_summaries
// by id, version and state columns), Search (the search index's reindex
// and verify, eventrelay's elastic.Admin) and Hooks, which adds the
// migration sets. The service's binary runs eventrelay's command set with
// them: `orders relayctl <command>` (embedded.Options.Admin).
package admin
