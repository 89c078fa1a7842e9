package postgres

import "github.com/jackc/pgx/v5"

// ClaimTx begins the relay's claim and reclaim transactions. Their
// statements read outbox_events by index only: the generic plan of a
// prepared statement made while the table was a few pages otherwise
// scanned it once per candidate of a claim after it grew, until the next
// ANALYZE replanned it. And they run without JIT: a claim whose estimate
// passed jit_above_cost compiled for about 90 ms a query that runs in
// about 20. One round trip, as a plain BEGIN (decision 0023).
var ClaimTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL jit = off"}

// OutcomeTx begins the transactions of the relay's fenced writes (outcomes,
// release). They are planned for their values at every execution: a
// generic plan made on a small table joined the batch's ids with a scan of
// the whole table, and planning them takes a fraction of a millisecond
// (the claim's plan takes about 3.5 ms, so it keeps a generic one).
var OutcomeTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = force_custom_plan"}
