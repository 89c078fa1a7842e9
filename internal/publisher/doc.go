// Package publisher is the engine of the outbox relay (the public package
// relay, run by cmd/publisher): it moves committed rows of outbox_events
// to Google Cloud Pub/Sub, in aggregate order, with several replicas
// running, and records every outcome.
//
// Layout (Kratos): config (the daemon's configs/publisher.yaml +
// environment, and the validation rules relay.Options shares), biz (the
// Relay use case), data (Postgres store, Pub/Sub sink, LISTEN wake-ups).
// The package itself holds only this documentation and the end-to-end
// tests.
//
// # Row life cycle
//
//	pending --claim--> publishing --published--> published   (deleted after retention)
//	                        |--transient error--> pending (attempts+1, next_attempt_at = now + backoff)
//	                        |--deterministic error or max_attempts--> failed (terminal)
//	                        |--behind a failed head / shutdown--> pending (released, no attempt)
//	                        '--lease expired or over max_processing--> pending (taken over)
//
// # Claiming and order
//
// A claim is one short transaction whose first statement takes the
// advisory transaction locks of the partitions it claims from (see
// Partitions below; one statement, in ascending partition order): claims
// (and reclaims) of one partition, by any replica, are serialized, and
// claims of disjoint partitions run in parallel. Under READ COMMITTED the
// claim statement takes its snapshot after the locks are granted, so it
// sees every earlier claim of its partitions. The claim takes, in id
// order, up to bulk_size rows of its partitions that are pending and
// ready (next_attempt_at <= now()) and whose (topic, ordering_key) has no
// earlier row that is blocking: publishing, failed, or pending with
// next_attempt_at in the future (waiting for a retry).
//
// "Ready now" is the sentinel next_attempt_at = 'epoch' (fresh, reclaimed
// and replayed rows), never now(): now() is a transaction's start, and a
// claim that waited for the lock can have an earlier now() than a row
// written meanwhile. That row would then be neither ready nor (if only
// retries counted as blocking) blocking, and later versions of its key
// would overtake it. With the sentinel, only scheduled retries carry a real
// time, both tests use the claim's now(), and a pending row is always
// exactly one of ready or blocking (the e2e suite caught the former rule
// reordering a key after a takeover).
// The rows are set to publishing with locked_by = worker id, a fresh
// lock_token (one per batch), lease_until = now + lease and claimed_at.
//
// FOR UPDATE SKIP LOCKED passes over rows another transaction holds
// locked. Another claim of the same partition never does (claims of a
// partition are serialized, and a key lives in one partition), but a
// fenced late write does: a publisher that lost its lease and records its outcome
// while the takeover commits waits for the takeover's row lock, then keeps
// a lock on the new row version (Postgres takes it to re-check the WHERE
// clause, which fails) until its transaction ends; an operator's UPDATE can
// hold one too. A skipped row is pending, so it does not block its key by
// the rule above; the claim therefore also keeps a candidate only when
// every earlier pending row of its key is in its own locked set (a count
// on outbox_events_pending_key_idx). Without it, after a frozen publisher
// thawed, the e2e suite saw versions 40 and 41 of a key published before
// 36..39.
//
// Consequences:
//
//   - Only one batch, of one replica, holds any key at a time: later rows
//     of a key in flight are not claimable until the batch completes. Pub/Sub
//     orders by arrival, so two publishers of one key would interleave.
//   - Several versions of one key can be in one batch; the worker publishes
//     them in id order from one goroutine on one ordered publisher, so
//     Pub/Sub keeps them in order, and the next batch of the key is claimed
//     only after Pub/Sub acknowledged them.
//   - A failed head blocks its key only (later rows wait, visible in
//     outbox_lag_events and outbox_oldest_age_seconds, until a replay), a
//     retry-waiting head blocks its key until its next attempt, and a hot
//     key does not stall others: other keys' rows are claimed around it.
//   - Id order is version order within a key: the writer appends an
//     aggregate's events in the transaction that holds the aggregate's row
//     lock, so version n+1 is inserted after version n committed.
//
// Cost: claim transactions of one partition are serialized (a few
// milliseconds each: the UPDATE of bulk_size rows dominates); replicas
// owning disjoint partitions claim in parallel, and publishing, the
// expensive part, runs in parallel on all replicas (concurrency batches per
// replica). The claim reads outbox_events_pending_idx in id order, passes
// over rows of partitions it does not own (the partition is computed from
// the index's ordering_key, no heap access: with N balanced replicas a
// claim examines about N times the rows it takes), and, per candidate,
// probes
// outbox_events_blocking_idx (topic, ordering_key, id) (a correlated
// subplan, forced with OFFSET 0), so a claim costs O(rows examined), not
// O(table): with a million pending rows it stays in the milliseconds.
// Rows skipped because their key is blocked are examined again by every
// claim (about 6µs each): a key with many rows behind a failed head makes
// each claim scan them (tens of thousands of rows cost tens of
// milliseconds; the failed head is alerted on with outbox_failed_events and
// replayed), and when every key with a backlog is in flight a claim scans
// the whole backlog to come back empty. The relay therefore claims on a
// wake-up (NOTIFY, a finished batch, a takeover; coalesced by the fetch
// cooldown, see Wake-up below), right after a full batch, one cooldown
// after a claim that found rows, and on the poll tick only when no claim
// ran during the last interval.
// Alternatives weighed: a key-level hashed NOT IN (cheaper per skipped row,
// but the planner then walks the primary key past every published row).
//
// The planner picks that index from the share of rows it believes are
// pending, and the statistics it believes are those of the last ANALYZE:
// one that ran during a backlog made every claim of the following drain
// walk the primary key from the first row (5 to 17 ms per claim of 25 in
// the bench, each claim slower than the last). outbox_events.status
// therefore has no statistics (migration 00007): the planner's default
// selectivity for one status favours the partial indexes, whatever the
// backlog (TestClaimPlanAfterAnAnalyzeOfABacklog).
//
// # Durability of the relay's own writes
//
// The writers' inserts commit synchronously: they are the events. The
// claim transaction commits asynchronously (synchronous_commit off, set by
// its first statement): a claim that a database crash loses is a lease
// that ended early, its rows are pending again or held by an expired
// token, and the lock token fences whatever its holder writes later; the
// rows are published again, a duplicate and never a loss. The database
// keeps a prefix of its commits, so a lost claim of a key's row loses
// every later claim of that key too. So a claim does not wait for a WAL
// flush before its batch is published. Outcomes stay synchronous (making
// them asynchronous did not change the writers' commit latency measurably,
// and would only add duplicates after a crash).
//
// outbox_events has fillfactor 50 (migration 00008): a claim and an
// outcome rewrite the row inside its page and log only the columns that
// changed, which follow the payload; with full pages each rewrite logged
// the whole row. The publisher's WAL per event fell from about 2,400 to
// 1,200 bytes (bench cost, "WAL bytes / event"; a writer's insert is about
// 1,500).
//
// A claimed batch is handed to the Pub/Sub client whole, then flushed
// (Sink.Flush): its messages leave without waiting for the bundling delay
// (publish.delay_threshold), which only groups messages of one key that
// arrive together, and a batch's messages of one key are all handed over
// before the flush.
//
// # Partitions and ownership
//
// A row's partition is outbox_partition_of(ordering_key) = (hashtext(key) &
// 2147483647) % 64, a function of migration 00004 (the one place that says
// so); all versions of a key share it. outbox_partitions holds one row per
// partition (owner, epoch, lease_until), outbox_publishers the live
// replicas (worker_id, alive_until). Every partition_heartbeat (default
// lease/4) a replica, in one transaction: renews its membership; renews
// the leases of its partitions fenced by (owner, epoch), and counts those
// not renewed as lost; computes its fair share ceil(partitions / live
// members); releases the partitions above it; acquires unowned or expired
// ones up to it (FOR UPDATE SKIP LOCKED, epoch + 1, never waiting, so
// heartbeats cannot deadlock). It acquires once before its first claim,
// and on a graceful stop releases its partitions and deletes its
// membership, and announces it (NOTIFY, payload "partitions", on the outbox
// channel): the others beat at once and take them, with their next
// heartbeat as the fallback. A replica whose first heartbeat left it short
// of its share announces too, so the others release theirs at once, and a
// heartbeat that released partitions announces that. Claims and reclaims use
// only the partitions owned while their leases last by the local clock.
//
// Leases and membership last lease - heartbeat. A replica killed at t
// renewed last at some t0 <= t, so its partitions and membership expire at
// t0 + lease - heartbeat, and each survivor's next heartbeat, at most one
// heartbeat later, sees fewer members, a larger share and free
// partitions: they move by t + lease. Its claimed rows are taken over by
// the partitions' new owners when their own lease expires (reclaim covers
// only the replica's partitions, under the same partition locks).
// Metrics: outbox_partitions_owned, outbox_partition_moves_total{reason=
// acquired|released|lost}.
//
// Ownership only divides the work; per-key order and exclusive claims do
// not depend on it. Two replicas can believe they own one partition for a
// while: the old owner's lease ended (a pause, a slow heartbeat) and a
// survivor acquired it before the old owner's next heartbeat finds its
// renewal refused (epoch changed) and drops it. Meanwhile both claim from
// it, and:
//
//   - their claims of that partition take its advisory lock, so they are
//     serialized exactly as all claims were before partitions: the later
//     one's snapshot sees the earlier one's rows as publishing, which block
//     their keys (head-of-line rule);
//   - even without that lock (e.g. during a rolling upgrade: replicas of the
//     previous release take the old schema lock exclusively, new ones take
//     it shared, so old and new still serialize) the row-level rules hold:
//     FOR UPDATE gives a row to one transaction only and re-checks
//     status = 'pending' on the version it locks, so no row is claimed
//     twice; a claim that skipped or lost a locked earlier row of a key
//     does not take the key's later rows (the "ordered" count); and the
//     next rows of a key are claimable only after the batch holding the
//     earlier ones recorded its outcome;
//   - every write of a claim's outcome is fenced by its lock_token, which
//     ownership never changes: losing a partition does not revoke a batch
//     in flight, which completes (or is taken over after its row lease) as
//     before.
//
// So a handover can cost a duplicate claim attempt, never an order
// violation or a double claim (TestOverlappingOwnersNeitherReorderNorDoubleClaim
// forces overlapping owners). A hot partition holds other keys too, but
// only as a hot key does: a claim takes other keys' rows around it, the
// partition being claimed by one replica at a time only limits that
// partition to one replica's publishing concurrency.
//
// # Fencing, leases and takeover
//
// Every write to claimed rows (mark published, schedule retry, mark
// failed, release, extend lease) is a single statement over id arrays with
// WHERE lock_token = @token AND status = 'publishing': a worker that lost
// its claim changes nothing (outbox_fenced_writes_total counts refused
// rows). Outcomes of a batch are written in one transaction. A batch
// extends its lease every lease/3 while it publishes. Every
// reclaim_interval each replica, under the same partition locks and for its
// own partitions only, returns rows
// whose lease expired or that were claimed more than max_processing ago to
// pending (lock cleared, last_error and error_history record the takeover)
// and counts them (outbox_takeovers_total); outbox_stuck_processing_events
// shows them until then. A taken-over batch may have reached Pub/Sub
// already: the events are published again (at least once; consumers
// deduplicate by event_id and guard by version). The first copy of each
// version still arrives in order, because the takeover republishes from
// the first unrecorded row of the key.
//
// # Publishing and outcomes
//
// Attributes: event_id, aggregate_type, aggregate_id, event_type, version,
// schema_version, occurred_at (RFC 3339, UTC) and the row's headers
// (traceparent, tracestate). Ordering key: the row's ordering_key. Topic:
// the row's topic, or publish.topics[aggregate_type].
//
// Every Publish request carries the messages of one ordering key, as Cloud
// Pub/Sub requires ("All PubsubMessages published in a given PublishRequest
// must specify the same ordering_key value"; a mixed request is refused with
// FAILED_PRECONDITION). The client library's ordered publisher
// (gpubsub.Publishers) bundles per key, keeps one request in flight per key
// and up to publish.max_inflight_requests requests per topic, so a hot key
// never stalls the others. When a publish fails the library pauses its key
// and fails its later messages; the worker waits for all of a key's
// results, calls ResumePublish, records retry or failed for the failing row
// and releases the later rows untouched (they are claimed again after the
// head). Every suite runs against the strict double
// (internal/gpubsub/strict), which refuses what Cloud Pub/Sub refuses.
//
// Reasons come from gpubsub.Classify: unavailable, timeout, rate_limited,
// server_error (and unknown, precondition_failed, request_invalid) are
// transient: pending, attempts+1, next_attempt_at = now +
// min(max_backoff, base_backoff*2^attempts) with equal or full jitter,
// last_error, error_reason and an error_history entry (last 20 kept).
// payload_invalid, topic_not_found, permission_denied and message_too_large
// are terminal: failed, failed_at, error_reason; so is a transient error on
// the max_attempts-th attempt (error_reason max_attempts_exceeded, the
// cause kept in error_history). Messages over publish.max_message_bytes
// fail with message_too_large without calling Pub/Sub. request_invalid
// means Pub/Sub refused a request the relay built (mixed ordering keys, too
// many messages or bytes): a defect of eventrelay, never the event's fault,
// so the row is retried and the relay logs it at error level; it shows in
// outbox_failed_total{reason="request_invalid"}.
//
// # Wake-up, load and shutdown
//
// A dedicated connection LISTENs on outbox.NotifyChannelFor(schema)
// (reconnecting with backoff), the channel writers in that schema notify,
// so schemas sharing a database do not wake each other; polling every
// poll_interval is the fallback. A full batch is followed by another claim
// at once; a finished batch wakes the claim loop (its keys' later rows may
// be claimable now).
//
// Wake-ups coalesce (fetch_cooldown, River's fetch cooldown): a claim that
// was not forced by a full batch starts at least fetch_cooldown after the
// previous one, and wake-ups meanwhile fold into it, so under load a claim
// takes what a cooldown's worth of commits wrote instead of one row per
// NOTIFY; after an idle period a NOTIFY is answered at once. A NOTIFY also
// costs the writer: Postgres takes a database-wide lock at commit and holds
// it until the commit record is flushed, so notifying commits queue behind
// each other's flushes. The relay therefore keeps a row in outbox_wakeups
// and the writers' pg_notify runs only when some row is armed (or no relay
// keeps one: older and polling relays get a NOTIFY on every commit):
//
//   - a non-empty claim turns the relay busy (armed_until = now()) and
//     starts the next claim one cooldown later without any wake-up;
//   - an empty claim arms it (armed_until = now() + 10 poll intervals,
//     renewed at idle polls) and, on that change, claims once more after
//     the cooldown: a writer that read "busy" just before the change
//     commits without a NOTIFY, and that claim takes its row. A writer
//     transaction that read "busy" and commits later than that waits for
//     the poll (the fallback, as for a lost notification);
//   - Stop deletes the row; rows not written for ten minutes (replicas
//     that died) are deleted by the next relay that stops.
//
// The row changes only on transitions and renewals (a busy relay rewrites
// it once a minute), outbox_wakeup_armed shows the state and
// outbox_empty_claims_total the claims that found nothing.
//
// On Stop (SIGTERM) the relay stops claiming, lets in-flight batches
// finish publishing and record their outcomes within the grace period,
// hands claimed-but-unstarted rows back at once and, when the grace period
// ends, stops waiting: unknown results are released (they may be published
// twice, never lost).
//
// # Retention
//
// Published rows older than retention are deleted every
// retention_interval in batches of retention_batch_size (repeated while
// batches come back full), oldest first, through outbox_events_published_idx.
//
// # Index upkeep
//
// A btree keeps the pages of the largest backlog it held, and every status
// change leaves entries behind in the partial indexes. After each retention
// round the relay compares each of eventrelay's outbox indexes, as of its
// last VACUUM/ANALYZE (pg_class), with an estimate of what its entries need
// (pg_stats widths); one over reindex_min_bytes and more than
// reindex_bloat_factor times the estimate is rebuilt with REINDEX INDEX
// CONCURRENTLY on a session holding the schema's maintenance advisory lock
// (other replicas skip the round), after dropping invalid leftovers
// (<index>_ccnew, _ccold) of an interrupted rebuild.
package publisher
