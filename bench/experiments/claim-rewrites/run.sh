#!/usr/bin/env bash
# usage: bench/experiments/claim-rewrites/run.sh current|hot|none
#
# Runs relaybench's "relay off" cost step (500 commits/s for 20 s, no
# publisher) and, alongside it, the given claim+mark script from pgbench at
# 25 cycles/s (one connection): the relay's statements at the coalesced
# rate, from a C client. Prints the step's table row (commit p99 is the
# 4th cell, WAL bytes per event the 8th) and the outbox's updates / HOT
# updates. Needs the project's Postgres (scripts/pg.sh start, any port).
set -euo pipefail
cd "$(dirname "$0")/../../.."
script=${1:?usage: run.sh current|hot|none}
eval "$(scripts/pg.sh start)" >/dev/null
bindir=${PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
out=$(mktemp)
psql -qc "drop database if exists eventrelay_bench with (force)"
go run ./cmd/relaybench -only cost -cost-modes off -cost-rates 500 -latency-each 20s -rtts 0 -runs 1 -out .run/bench >"$out" 2>&1 &
bench=$!
until [ "$(psql -d eventrelay_bench -Atc "select count(*) > 600 from catalog.outbox_events" 2>/dev/null)" = t ]; do sleep 0.1; done
if [ "$script" = hot ]; then
  psql -d eventrelay_bench -qc "drop index catalog.outbox_events_publishing_idx"
fi
if [ "$script" != none ]; then
  PGOPTIONS="-c search_path=catalog" "$bindir/pgbench" -n -f "bench/experiments/claim-rewrites/$script.sql" \
    -R 25 -T 19 -c 1 eventrelay_bench | grep -E "tps|failed"
  psql -d eventrelay_bench -Atc "select 'updates ' || n_tup_upd || ', HOT ' || n_tup_hot_upd from pg_stat_user_tables where relname = 'outbox_events'"
fi
wait "$bench"
grep "^| relay off" "$out"
