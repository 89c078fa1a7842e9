// Package relay is eventrelay's outbox relay as a library: it claims the
// committed rows of outbox_events (written by outbox.Writer in the same
// transaction as the business change), publishes them to Google Cloud
// Pub/Sub with the row's ordering key (the aggregate id) and records the
// outcome. cmd/publisher is this package run as a daemon; a Kratos
// service can instead embed it next to its own servers:
//
//	pc, _ := relay.PoolConfig(dsn, "orders")   // search_path = orders
//	pool, _ := pgxpool.NewWithConfig(ctx, pc)
//	r, err := relay.New(pool, pubsubClient, relay.Options{Schema: "orders", Health: h, Registerer: reg})
//	app := kratos.New(kratos.Server(httpSrv, grpcSrv, r))   // or r.Run(ctx)
//
// With Wire, ProviderSet provides the *Relay from a pool, a client and
// Options.
//
// # Contract
//
// The relay publishes every committed outbox row at least once, in
// aggregate order, and records its outcome in the row; docs/design.md in
// the repository describes the protocol that keeps these promises
// (claims, leases, fencing, reclaim, partitions, retention, index upkeep).
//
//   - No loss: every committed row is eventually published or ends in
//     status failed with an error_reason; rows of rolled-back
//     transactions never exist. A row may be published more than once
//     (after a crash or an abandoned drain): consumers deduplicate by
//     the event_id attribute.
//   - Per-aggregate order: for one ordering key, rows reach Pub/Sub in
//     outbox id order, across replicas, retries and a failed head of
//     line. Several relays (replicas, processes) may share one outbox:
//     they divide its 64 key-hash partitions (outbox_partitions) under
//     leases renewed every PartitionHeartbeat and
//     publish disjoint keys in parallel; a stopped relay's partitions move
//     at the others' next heartbeat, a crashed one's within one Lease.
//   - Every message carries the attributes contract.AttrEventID,
//     AttrAggregateType, AttrAggregateID, AttrEventType, AttrVersion,
//     AttrSchemaVersion and AttrOccurredAt plus the row's headers (W3C
//     trace context).
//   - Pub/Sub or its environment failing (unavailable, timeout,
//     server_error, rate_limited, precondition_failed, topic_not_found,
//     permission_denied) holds publishing to the topic with backoff and
//     jitter (readiness check "publish_blocked", gauge
//     outbox_publish_blocked), spends no row's attempts and never fails a
//     row; the first successful publish ends the hold. Errors that may be
//     the event's own (unknown, request_invalid) are retried with
//     exponential backoff up to MaxAttempts; deterministic ones
//     (payload_invalid, message_too_large) fail the row at once. Failed
//     rows are replayed with relayctl replay.
//   - Postgres refusing the relay's claim, mark, lease or reclaim
//     statement for a missing privilege (SQLSTATE 42501) holds the relay
//     (readiness check "store_blocked" naming the table and privilege,
//     gauge outbox_store_blocked) without failing a row, until the GRANT.
//   - A replica that owns partitions and published nothing for StallAfter
//     while the oldest pending row is older than that reports a stall
//     (readiness check "stall", gauge outbox_stalled) until it publishes
//     again.
//
// # Log mode
//
// Options.Mode = ModeLog reads the committed inserts of outbox_events
// from a logical replication slot (pgoutput; wal_level=logical and a role
// with REPLICATION) instead of claiming rows, and writes nothing per event
// but the failure of an event's own fault. The contract above holds with
// these differences: rows stay pending (the slot's confirmed position and
// outbox_log_slots record what is published), an environmental error
// holds the whole stream rather than one topic, one replica reads the slot
// while the others wait as standbys, and a lost slot is replaced after
// the rows not known to be published are republished (duplicates, never a
// loss). A replayed row is published again and a retried or resolved
// failed row releases the rows of its key (the publication carries the
// outbox's updates); retention deletes the rows below every slot's
// published horizon. Claims, leases, partitions, the gauges of pending
// rows and the stall check do not run in this mode.
//
// # Schema
//
// The relay's SQL is unqualified: it works in the schema the pool's
// search_path starts with. Options.Schema names it, or (empty) is taken
// from that search_path; New refuses a pool whose search_path does not
// start with Options.Schema, or sets none, so a relay cannot silently work
// on another service's outbox. PoolConfig builds a conforming pool
// configuration. The "schema" readiness check reports schema_missing
// until the eventrelay migrations ran in that schema.
//
// # Wake-up
//
// The relay LISTENs on outbox.NotifyChannelFor(Schema) and polls every
// PollInterval as a fallback. outbox.Writer (Config.Notify) and relayctl
// notify the channel of the schema their transaction works in, so
// services sharing a database wake only their own relays. Override both
// ends together (Options.NotifyChannel, outbox.Config.NotifyChannel) or
// neither.
//
// # Lifecycle
//
// A Relay runs once: Run(ctx), or Start and Stop as a Kratos
// transport.Server. Stop marks Options.Health draining, stops claiming,
// hands claimed-but-unstarted rows back at once and lets in-flight
// batches finish within DrainTimeout; what is still unfinished then is
// handed back to be published by another replica. Give the Kratos app a
// stop timeout of at least DrainTimeout plus Lease (Options.StopTimeout, 50s
// by default; Kratos' own default is 10s): Stop warns, naming both values,
// when its context's deadline is shorter.
package relay
