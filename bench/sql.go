package bench

// The bench's own SQL is plumbing only: resets, counts, spans and sizes.
// The ceilings run the root module's benchmarks of the daemons' own
// statements (rootbenchmark.go), so "ceiling" means "the same database
// work without Pub/Sub or decoding".

// Plumbing.
const (
	sqlReset = `TRUNCATE outbox_events, outbox_claims, inbox_events, video_projection, videos, outbox_replays, admin_audit, outbox_wakeups RESTART IDENTITY`

	// sqlCountPending counts unpublished rows through the partial indexes.
	// At 200,000 pending rows it takes Postgres 200 to 700 ms: a drain
	// polls sqlAnyPending and watches sqlLastPublished instead.
	sqlCountPending = `SELECT (SELECT count(*) FROM outbox_events WHERE status = 'pending')
     + (SELECT count(*) FROM outbox_events WHERE status = 'publishing')
     + (SELECT count(*) FROM outbox_events WHERE status = 'failed')`
	sqlCountPublished = `SELECT count(*) FROM outbox_events WHERE status = 'published'`

	// sqlAnyPending is 1 while a row is pending or publishing, else 0: the
	// first live entry of a partial index, not a count of the backlog.
	sqlAnyPending = `SELECT count(*) FROM (
    SELECT 1 FROM outbox_events WHERE status = 'pending'
    UNION ALL
    SELECT 1 FROM outbox_events WHERE status = 'publishing'
    LIMIT 1) AS left_over`

	// sqlLastPublished is when the newest published row was marked, in
	// microseconds (0: none yet): the last entry of
	// outbox_events_published_idx, a drain's sign of progress.
	sqlLastPublished = `SELECT coalesce((extract(epoch FROM max(published_at)) * 1e6)::bigint, 0)
    FROM outbox_events WHERE status = 'published'`

	// sqlWALBytes is the cluster's WAL write position in bytes: its
	// growth over a step is the WAL that the step's commits (writers and
	// relay) made the server write and flush.
	sqlWALBytes = `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8`

	// sqlResetPartitions and sqlResetPublishers clear partition ownership
	// between runs of the replicas scenario (epochs keep counting).
	sqlResetPartitions = `UPDATE outbox_partitions SET owner = NULL, lease_until = NULL`
	sqlResetPublishers = `DELETE FROM outbox_publishers`
	// sqlLeasedPartitions counts each owner's partitions under a live
	// lease (the replicas scenario waits on it).
	sqlLeasedPartitions = `SELECT owner, count(*) FROM outbox_partitions
    WHERE owner IS NOT NULL AND lease_until >= now() GROUP BY owner`
	sqlCountInbox    = `SELECT count(*) FROM inbox_events`
	sqlCountFailed   = `SELECT count(*) FROM outbox_events WHERE status = 'failed'`
	sqlCountConsumer = `SELECT count(*) FROM inbox_events WHERE consumer = $1`

	// sqlEventTimes lists every outbox event with its claim and publish
	// times and the time consumer $1 applied it.
	sqlEventTimes = `SELECT o.event_id, o.claimed_at, o.published_at, i.processed_at
FROM outbox_events o LEFT JOIN inbox_events i ON i.consumer = $1 AND i.event_id = o.event_id`

	// sqlInboxSpan is the time a consumer took from its first receive to
	// its last apply.
	sqlInboxSpan = `SELECT coalesce(extract(epoch FROM max(processed_at) - min(received_at)), 0)::float8
FROM inbox_events WHERE consumer = $1`

	// sqlDrainSpan is the time from the first claim to the last publish.
	sqlDrainSpan = `SELECT count(*), coalesce(extract(epoch FROM max(published_at) - min(claimed_at)), 0)
FROM outbox_events WHERE status = 'published'`

	sqlIndexSizes = `SELECT indexrelid::regclass::text, pg_relation_size(indexrelid)
FROM pg_index WHERE indrelid = 'outbox_events'::regclass ORDER BY 1`

	sqlTableSizes = `SELECT pg_table_size('outbox_events'), pg_indexes_size('outbox_events'),
       (SELECT count(*) FROM outbox_events)`
)
