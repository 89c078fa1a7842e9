// Package bench is eventrelay's measuring instrument, driven by
// cmd/relaybench (`make bench`, `make bench-smoke`).
//
// Every figure is reported beside a ceiling measured in the same run, as a
// ratio, because the machines it runs on are small and noisy:
//
//   - Ceilings: a bare pgx claim+mark loop over the rows a publisher would
//     claim (same SQL shape, no Pub/Sub); a bare Pub/Sub publish loop (same
//     message size and ordering-key count) against pstest and the emulator;
//     a bare projector write loop (inbox insert + version-guarded upsert).
//   - Publisher drain, projector apply, end-to-end latency at offered load,
//     claim latency against table size (and after retention), peak RSS of
//     the daemons. Beside every drain and publish ceiling, the Publish
//     requests the strict double saw per event, billable bytes per event
//     and refused requests.
//   - Cost: what the relay costs the writers' database (their commit
//     latency under an open-loop load with a wait-event profile of their
//     backends, Postgres CPU per 1,000 events, WAL per event, events per
//     claim) with the relay off, NOTIFY on every commit, polling,
//     coalesced wake-ups, and the relay's statements alone (mode "sql",
//     relay/internal/claim's BenchmarkPacedClaims: the judged figure); and no relay but a CPU burner with the publisher's
//     duty cycle (CPUBurstEnv), which separates the machine's reaction to
//     a co-located publisher from the database's share.
//   - Receive: the projector against a bare client-library Receive loop
//     acking the same messages, each in its own process (relaybench run
//     as a child, ChildEnv), CPU seconds per 1,000 events of each; the
//     publish ceiling's library runs as such a child too, so its CPU is
//     the library's alone.
//   - Read-your-writes (readwait): the wait a read with its write's
//     consistency token adds (consistency.Waiter), with the writer, relay
//     and projector of the public packages in process.
//
// Each scenario runs Config.Runs times; the report keeps every run and
// gives the median with min and max. Targets (ratios) are printed
// as PASS, MISS or N/A beside the figure; a miss is reported, never hidden.
//
// Benchmark data lives in its own database (Config.Database, default
// eventrelay_bench; smoke runs use eventrelay_bench_smoke), dropped and
// re-created at the start of every run under a run lock, so tests sharing
// the Postgres server are not disturbed and two runs never overlap.
//
// The ceilings, the scale scenario's claims and the relay's statements
// alone run the root module's Go benchmarks of those statements
// (relay/internal/claim: claim, mark, retention, the claim's plan, on the
// bench database; projector: the inbox insert and a version-guarded
// upsert pipelined in one round trip, on a fresh test database) and read
// their b.ReportMetric figures; the projector engine runs in process, and the
// publisher and projector run as processes built from cmd/ (with a pprof
// listener added at build time). The bench's own SQL (sql.go) is plumbing:
// resets, counts, spans and sizes.
package bench
