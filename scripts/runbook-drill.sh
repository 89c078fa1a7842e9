#!/usr/bin/env bash
# Runbook drill: runs the commands of docs/runbook.md against this
# repository — the real Pub/Sub emulator, the private Postgres, the
# Elasticsearch test server and the three daemons — and checks their exit
# codes. Every relayctl / gcloud / SQL command of the runbook is exercised
# here (the SQL blocks are extracted from docs/runbook.md and run as they
# are written).
#
#   scripts/runbook-drill.sh          # ~1-2 minutes; exit 0 when every step behaved
#
# Uses its own emulator (port $DRILL_PUBSUB_PORT, default 28790), its own
# database (runbook_drill, recreated) and its own ports (18000-18082, 19200);
# stops everything it started on exit. Logs: .run/runbook-drill/.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
run=$repo/.run/runbook-drill
mkdir -p "$run"
log=$run/drill.log
: >"$log"
pids=()

cleanup() {
  local code=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  EVENTRELAY_PUBSUB_DIR=$run/emulator EVENTRELAY_PUBSUB_PORT=$DRILL_PUBSUB_PORT scripts/pubsub-emulator.sh stop >/dev/null 2>&1 || true
  if [ "$code" = 0 ]; then echo "runbook drill: OK (log: $log)"; else echo "runbook drill: FAILED (exit $code; log: $log)" >&2; fi
}
trap cleanup EXIT

step() { echo "== $*" | tee -a "$log"; }
# expect CODE cmd...: run cmd, log its output, fail unless it exits CODE.
expect() {
  local want=$1; shift
  echo "\$ $*" >>"$log"
  set +e
  "$@" >"$run/out" 2>&1
  local got=$?
  set -e
  cat "$run/out" >>"$log"
  if [ "$got" != "$want" ]; then
    echo "runbook drill: '$*' exited $got, want $want:" >&2
    cat "$run/out" >&2
    exit 1
  fi
}
# contains TEXT: the last command's output contains TEXT.
contains() {
  grep -qF -- "$1" "$run/out" || { echo "runbook drill: output lacks '$1':" >&2; cat "$run/out" >&2; exit 1; }
}
# wait_for CODE SECONDS cmd...: retry cmd until it exits CODE.
wait_for() {
  local want=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  while :; do
    set +e
    "$@" >"$run/out" 2>&1
    local got=$?
    set -e
    [ "$got" = "$want" ] && { echo "\$ $* (after waiting)" >>"$log"; cat "$run/out" >>"$log"; return 0; }
    if [ $SECONDS -ge $deadline ]; then
      echo "runbook drill: '$*' still exits $got after ${secs}s, want $want:" >&2
      cat "$run/out" >&2
      exit 1
    fi
    sleep 0.5
  done
}

DRILL_PUBSUB_PORT=${DRILL_PUBSUB_PORT:-28790}

step "build"
go build -o "$run/bin/" ./cmd/publisher ./cmd/relayctl/drillpublish
# The catalog demo's daemons and its relayctl (the catalog's hooks).
go -C examples/catalog-demo build -o "$run/bin/" ./cmd/catalog ./cmd/projector ./cmd/relayctl
go -C e2e build -o "$run/bin/" ./cmd/es-testserver
export PATH=$run/bin:$PATH

step "infrastructure: Postgres, a fresh emulator, the Elasticsearch test server"
eval "$(scripts/pg.sh start)"
psql -q -d "$DATABASE_URL" -c "DROP DATABASE IF EXISTS runbook_drill WITH (FORCE)" -c "CREATE DATABASE runbook_drill" >>"$log" 2>&1
export DATABASE_URL=${DATABASE_URL%/*}/runbook_drill?sslmode=disable
export PUBSUB_PROJECT_ID=eventrelay-local
eval "$(EVENTRELAY_PUBSUB_DIR=$run/emulator EVENTRELAY_PUBSUB_PORT=$DRILL_PUBSUB_PORT scripts/pubsub-emulator.sh fresh)"
# gcloud against the emulator (runbook: "Pointing gcloud at the emulator").
export CLOUDSDK_API_ENDPOINT_OVERRIDES_PUBSUB=http://$PUBSUB_EMULATOR_HOST/
export CLOUDSDK_AUTH_DISABLE_CREDENTIALS=true
export CLOUDSDK_CORE_PROJECT=$PUBSUB_PROJECT_ID
# The search projection (and the Elasticsearch half of verify / rebuild
# --reindex) runs unless DRILL_SEARCH=false.
search=${DRILL_SEARCH:-true}
if [ "$search" = true ]; then
  es-testserver -addr 127.0.0.1:19200 >"$run/es.log" 2>&1 &
  pids+=($!)
  export ELASTIC_URL=http://127.0.0.1:19200
else
  unset ELASTIC_URL
fi

step "migrate (guarded) and pubsub ensure (twice)"
expect 2 relayctl migrate up --expect-db production
contains "refusing to migrate"
expect 0 relayctl migrate up --expect-db runbook_drill --expect-host "127.0.0.1:$PGPORT" --by drill --why "runbook drill"
expect 0 relayctl migrate status
expect 2 relayctl migrate down --by drill --why "undo"
contains "--expect-db"
expect 0 relayctl migrate down --expect-db runbook_drill --by drill --why "undo 00001"
expect 0 relayctl migrate up --expect-db runbook_drill --by drill --why "redo 00001"
expect 1 relayctl pubsub ensure -f configs/pubsub.yaml --dry-run
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml
contains "no changes"
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml --dry-run
# Drift in a mutable field is put back.
expect 0 gcloud pubsub subscriptions update catalog.video.projection-pg --ack-deadline=99 --dead-letter-topic=catalog.video.events.dlq-pg --max-delivery-attempts=7
expect 1 relayctl pubsub ensure -f configs/pubsub.yaml --dry-run
contains "ack_deadline_seconds: 99 -> 30"
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml
contains "updated"
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml
contains "no changes"
# The drill's own ordered tap on the events topic (not in configs/pubsub.yaml):
# it later supplies a real envelope to plant as a dead letter.
expect 0 gcloud pubsub subscriptions create catalog.video.audit --topic=catalog.video.events --enable-message-ordering
expect 0 gcloud pubsub topics list --format="value(name)"
contains "catalog.video.events.dlq-pg"
expect 0 gcloud pubsub topics describe catalog.video.events

step "start catalog, publisher, projector"
CATALOG_HTTP_ADDR=127.0.0.1:18000 CATALOG_GRPC_ADDR=127.0.0.1:19000 catalog -conf examples/catalog-demo/configs/catalog.yaml >"$run/catalog.log" 2>&1 &
pids+=($!)
start_publisher() {
  OUTBOX_HTTP_PORT=18081 OUTBOX_WORKER_ID=drill-pub OUTBOX_BASE_BACKOFF_SECONDS=0.2 OUTBOX_MAX_ATTEMPTS=3 \
    publisher -conf configs/publisher.yaml >>"$run/publisher.log" 2>&1 &
  publisher_pid=$!
  pids+=($publisher_pid)
}
start_publisher
PROJECTOR_HTTP_PORT=18082 PROJECTOR_SEARCH_ENABLED=$search projector -conf examples/catalog-demo/configs/projector.yaml >"$run/projector.log" 2>&1 &
pids+=($!)
wait_for 0 30 curl -fsS http://127.0.0.1:18000/readyz
wait_for 0 30 curl -fsS http://127.0.0.1:18081/readyz
wait_for 0 30 curl -fsS http://127.0.0.1:18082/readyz

step "workload: 20 videos, 5 updates, 2 deletes"
ids=()
for i in $(seq 1 20); do
  id=$(curl -fsS -X POST http://127.0.0.1:18000/v1/videos -H 'content-type: application/json' \
    -d "{\"uploader_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"title\":\"drill $i\",\"status\":\"VIDEO_STATUS_PUBLISHED\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["video"]["id"])')
  ids+=("$id")
done
for i in 0 1 2 3 4; do
  curl -fsS -X PATCH "http://127.0.0.1:18000/v1/videos/${ids[$i]}" -H 'content-type: application/json' -d '{"title":"drill updated"}' >/dev/null
done
curl -fsS -X DELETE "http://127.0.0.1:18000/v1/videos/${ids[5]}?reason=drill" >/dev/null
curl -fsS -X DELETE "http://127.0.0.1:18000/v1/videos/${ids[6]}?reason=drill" >/dev/null
wait_for 0 60 relayctl verify
contains "CONVERGED"
expect 0 relayctl status -f configs/pubsub.yaml
contains "OK: nothing needs attention"

step "the first 60 seconds"
expect 0 curl -fsS http://127.0.0.1:18081/readyz
expect 0 curl -fsS http://127.0.0.1:18082/readyz
expect 0 sh -c "curl -fsS http://127.0.0.1:18081/metrics | grep -E '^outbox_(lag_events|oldest_age_seconds|inflight_events|stuck_processing_events|failed_events|failed_total|retry_scheduled_total|terminal_failed_total)'"
contains "outbox_lag_events"
contains "outbox_oldest_age_seconds"
contains "outbox_stuck_processing_events"
expect 0 sh -c "curl -fsS http://127.0.0.1:18082/metrics | grep -E '^projector_(applied|duplicate|stale_skipped|failed|dead_lettered)_total'"
contains "projector_applied_total"
expect 0 relayctl status --max-processing 5m
expect 0 relayctl verify --json --samples 50
expect 0 relayctl replay --reason max_attempts_exceeded --since 6h --dry-run
expect 0 relayctl replay --reason max_attempts_exceeded --since 6h --by drill --why "DRILL-0 nothing to replay" --rate 500
contains "replayed 0 row(s)"
expect 0 relayctl replay --include-published --aggregate "${ids[0]}" --dry-run
contains "dry run: 2 row(s)"

step "diagnosis SQL of the runbook (every \`\`\`sql block, as written)"
python3 - docs/runbook.md >"$run/runbook.sql" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for block in re.findall(r"```sql\n(.*?)```", text, re.S):
    print(block.strip().rstrip(";") + ";")
PY
expect 0 psql -X -v ON_ERROR_STOP=1 -d "$DATABASE_URL" -c "SET search_path = catalog" -f "$run/runbook.sql"

if [ "$search" = true ]; then
  step "incident: Elasticsearch throttling (429), the Postgres read model unaffected"
  expect 0 curl -fsS "$ELASTIC_URL/_cluster/health?pretty"
  expect 0 curl -fsS -X POST "$ELASTIC_URL/_estest/fault" -H 'content-type: application/json' -d '{"status":429,"seconds":5}'
  for i in 1 2 3; do
    curl -fsS -X POST http://127.0.0.1:18000/v1/videos -H 'content-type: application/json' \
      -d "{\"uploader_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"title\":\"during 429 $i\"}" >/dev/null
  done
  wait_for 0 30 sh -c "curl -fsS http://127.0.0.1:18082/metrics | grep -E '^projector_failed_total\{projection=\"search\",reason=\"rate_limited\"\}'"
  expect 3 relayctl verify    # Elasticsearch cannot be read while it answers 429
  contains "rate_limited"
  wait_for 0 30 relayctl verify --elastic-url ""   # the Postgres read model alone: unaffected
  contains "postgres video_projection: OK"
  expect 0 sh -c "psql -X -d '$DATABASE_URL' -c 'SELECT consumer, count(*) AS events, max(received_at) AS last_received FROM catalog.inbox_events GROUP BY consumer ORDER BY consumer'"
  wait_for 0 90 relayctl verify   # caught up after the fault
fi

step "incident: deterministic failures (topic_not_found), fix, replay"
# misroute TOPIC AGGREGATE: a restatement of the aggregate's last event to
# a topic that does not exist. The publisher fails it terminally
# (topic_not_found) after one attempt.
misroute() {
  psql -X -q -d "$DATABASE_URL" -v ON_ERROR_STOP=1 >>"$log" 2>&1 <<SQL
INSERT INTO catalog.outbox_events (event_id, aggregate_type, aggregate_id, aggregate_version, event_type,
    schema_version, ordering_key, topic, headers, payload, occurred_at, origin)
SELECT gen_random_uuid(), aggregate_type, aggregate_id, aggregate_version, event_type, schema_version,
    ordering_key, '$1', headers, payload, occurred_at, 'rebuild'
FROM catalog.outbox_events WHERE aggregate_id = '$2' ORDER BY id DESC LIMIT 1;
SQL
}
misroute catalog.video.misrouted "${ids[7]}"
wait_for 1 30 relayctl failed list --reason topic_not_found
expect 1 relayctl status
contains "failed{reason=topic_not_found}"
expect 1 relayctl failed list --reason topic_not_found --history
contains "topic_not_found"
expect 1 relayctl failed list --topic catalog.video.misrouted --since 1h --json
expect 0 relayctl replay --reason topic_not_found --since 1h --dry-run
contains "dry run: 1 row(s)"
expect 2 relayctl replay --reason topic_not_found --since 1h
contains "--by and --why are required"
expect 0 gcloud pubsub topics create catalog.video.misrouted
expect 0 relayctl replay --reason topic_not_found --since 1h --by drill --why "DRILL-1 topic created"
contains "replayed 1 row(s)"
wait_for 0 30 relayctl failed list --reason topic_not_found

step "incident: a failed row that must never be sent (failed resolve)"
misroute catalog.video.never "${ids[7]}"
wait_for 1 30 relayctl failed list --topic catalog.video.never
never=$(psql -X -At -d "$DATABASE_URL" -c "SELECT id FROM catalog.outbox_events WHERE topic = 'catalog.video.never'")
expect 0 relayctl failed resolve --ids "$never" --dry-run
contains "dry run: nothing changed"
expect 2 relayctl failed resolve --ids "$never"
contains "--by and --why are required"
expect 0 relayctl failed resolve --ids "$never" --by drill --why "DRILL-1b test event, never to be sent"
contains "resolved 1 row(s)"
expect 0 relayctl failed list
expect 0 relayctl replay --ids "$never" --dry-run
contains "dry run: 0 row(s)"

step "incident: dead letters (poison published with gcloud), triage with relayctl and gcloud"
# A body that is not an envelope, with valid attributes: payload_invalid.
expect 0 gcloud pubsub topics publish catalog.video.events --message "not a protobuf envelope" \
  --ordering-key "${ids[8]}" \
  --attribute "event_id=$(cat /proc/sys/kernel/random/uuid),event_type=catalog.video.updated,aggregate_type=catalog.video,aggregate_id=${ids[8]},version=99,schema_version=1"
wait_for 1 60 relayctl dlq list --subscription catalog.video.events.dlq-pg
contains "payload_invalid"
expect 1 relayctl dlq list --subscription catalog.video.events.dlq-pg --reason payload_invalid --json
expect 0 relayctl dlq show --subscription catalog.video.events.dlq-pg --reason payload_invalid
contains "body does not decode"
expect 1 relayctl status -f configs/pubsub.yaml
contains "dead letters waiting in catalog.video.events.dlq-pg"
# gcloud triage (runbook "Dead letters piling up"): pull without ack, read
# the attributes and the body, release or ack.
expect 0 gcloud pubsub subscriptions pull catalog.video.events.dlq-pg --limit 10 --format=json
cp "$run/out" "$run/dl.json"
contains "payload_invalid"
expect 0 jq -r '.[] | [.message.messageId, .message.attributes.error_reason, .message.attributes.event_id, .message.attributes.aggregate_id, .message.attributes.error] | @tsv' "$run/dl.json"
contains "payload_invalid"
expect 0 sh -c "jq -r '.[0].message.data' '$run/dl.json' | tr '_-' '/+' | base64 -d"
contains "not a protobuf envelope"
expect 0 gcloud pubsub subscriptions modify-message-ack-deadline catalog.video.events.dlq-pg --ack-ids "$(jq -r '[.[].ackId] | join(",")' "$run/dl.json")" --ack-deadline 0
# released: relayctl (or the next gcloud pull) sees it again at once
expect 1 relayctl dlq list --subscription catalog.video.events.dlq-pg --reason payload_invalid
expect 0 gcloud pubsub subscriptions pull catalog.video.events.dlq-pg --limit 10 --format=json
cp "$run/out" "$run/dl.json"
# Republish with gcloud (text bodies only), original attributes minus the
# dead-letter ones, ordering key = aggregate id; then ack it in the DLQ.
msg=$(jq -r '.[0].message.data' "$run/dl.json" | tr '_-' '/+' | base64 -d)
key=$(jq -r '.[0].message.attributes.aggregate_id' "$run/dl.json")
attrs=$(jq -r '.[0].message.attributes | del(.error_reason, .error, .projection, .delivery_attempt, .original_message_id, .dead_lettered_at) | to_entries | map("\(.key)=\(.value)") | join(",")' "$run/dl.json")
expect 0 gcloud pubsub topics publish catalog.video.events --message "$msg" --ordering-key "$key" --attribute "$attrs"
expect 0 gcloud pubsub subscriptions ack catalog.video.events.dlq-pg --ack-ids "$(jq -r '.[0].ackId' "$run/dl.json")"
# Still garbage: the projection dead-letters it again; purge it for good.
wait_for 1 60 relayctl dlq list --subscription catalog.video.events.dlq-pg --reason payload_invalid
expect 0 relayctl dlq purge --subscription catalog.video.events.dlq-pg --reason payload_invalid --dry-run
expect 0 relayctl dlq purge --subscription catalog.video.events.dlq-pg --reason payload_invalid --by drill --why "DRILL-2 garbage test message"
contains "purged"
if [ "$search" = true ]; then
  # The search projection dead-lettered the same poison (twice): purge it there too.
  wait_for 1 60 relayctl dlq list --subscription catalog.video.events.dlq-es --reason payload_invalid
  expect 0 relayctl dlq purge --subscription catalog.video.events.dlq-es --reason payload_invalid --by drill --why "DRILL-2 garbage test message"
fi

step "dead letter with a valid body: republish after the fix (relayctl dlq replay)"
# A real envelope, as published: the first message of the audit subscription.
expect 0 gcloud pubsub subscriptions pull catalog.video.audit --limit 1 --format=json
cp "$run/out" "$run/audit.json"
# Publish it to the dead-letter topic the way the projector does (original
# attributes + error_*), a stand-in for a poison produced under a bug.
plant_dead_letter() {
  local flags
  mapfile -t flags < <(jq -r '.[0].message.attributes | to_entries[] | "-attr=\(.key)=\(.value)"' "$run/audit.json")
  drillpublish -topic catalog.video.events.dlq-pg -data-b64 "$(jq -r '.[0].message.data' "$run/audit.json")" "${flags[@]}" \
    -attr error_reason=mapping_error -attr projection=videos -attr "error=drill: mapping bug" \
    -attr delivery_attempt=1 -attr original_message_id="$(jq -r '.[0].message.messageId' "$run/audit.json")"
}
expect 0 plant_dead_letter
wait_for 1 30 relayctl dlq list --subscription catalog.video.events.dlq-pg --reason mapping_error
expect 0 relayctl dlq show --subscription catalog.video.events.dlq-pg --reason mapping_error
contains '"aggregateId"'
expect 0 relayctl dlq replay --subscription catalog.video.events.dlq-pg -f configs/pubsub.yaml --reason mapping_error --dry-run
expect 0 relayctl dlq replay --subscription catalog.video.events.dlq-pg -f configs/pubsub.yaml --reason mapping_error --by drill --why "DRILL-3 mapping fixed"
contains "replayed 1 message(s) to catalog.video.events"
wait_for 0 30 relayctl dlq list --subscription catalog.video.events.dlq-pg
expect 0 relayctl verify   # the republished event was a duplicate: absorbed

step "seek and snapshots on the emulator: snapshots work, seek to a time is UNIMPLEMENTED"
expect 0 relayctl seek --subscription catalog.video.projection-pg --time 2h --dry-run
expect 3 relayctl seek --subscription catalog.video.projection-pg --time 2h --by drill --why "DRILL-4 re-project last 2h"
contains "UNIMPLEMENTED"
expect 0 relayctl snapshot create --subscription catalog.video.projection-pg --name before-deploy-42 --by "${USER:-drill}" --why "deploy 42"
expect 0 relayctl snapshot list
contains "before-deploy-42"
# A batch published after the snapshot, applied (acked) by the projector...
dup_before=$(curl -fsS http://127.0.0.1:18082/metrics | awk '/^projector_duplicate_total\{projection="videos"\}/ {print $2}')
for i in 1 2 3 4 5; do
  curl -fsS -X POST http://127.0.0.1:18000/v1/videos -H 'content-type: application/json' \
    -d "{\"uploader_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"title\":\"after snapshot $i\"}" >/dev/null
done
wait_for 0 30 relayctl verify
# ...is delivered again by the seek, and absorbed as duplicates.
expect 0 relayctl seek --subscription catalog.video.projection-pg --snapshot before-deploy-42 --by drill --why "DRILL-4 roll back"
dups() { curl -fsS http://127.0.0.1:18082/metrics | awk '/^projector_duplicate_total\{projection="videos"\}/ {print $2}'; }
more_dups() { [ "$(python3 -c "print(float('${1:-0}') >= float('${dup_before:-0}') + 5)")" = True ]; }
deadline=$((SECONDS + 30))
until more_dups "$(dups)"; do
  [ $SECONDS -lt $deadline ] || { echo "runbook drill: the seek did not redeliver the batch (duplicates $(dups), before $dup_before)" >&2; exit 1; }
  sleep 0.5
done
echo "duplicates absorbed after seek: before ${dup_before:-0}, now $(dups)" >>"$log"
expect 0 relayctl verify
expect 0 relayctl snapshot delete --name before-deploy-42 --by "${USER:-drill}" --why "deploy 42 done"

step "incident: read-model drift (hand edit, truncate), rebuild, verify"
expect 0 psql -X -q -d "$DATABASE_URL" -c "UPDATE catalog.video_projection SET title = 'edited by hand' WHERE video_id = '${ids[9]}'"
expect 1 relayctl verify
contains "${ids[9]}"
contains "diverged"
expect 0 psql -X -q -d "$DATABASE_URL" -c "DELETE FROM catalog.video_projection WHERE video_id = '${ids[9]}'"
expect 0 relayctl rebuild --ids "${ids[9]}" --by drill --why "DRILL-5 repair hand edit"
wait_for 0 30 relayctl verify
expect 0 psql -X -q -d "$DATABASE_URL" -c "TRUNCATE catalog.video_projection"
expect 1 relayctl verify
contains "missing"
expect 0 relayctl rebuild --dry-run
expect 0 relayctl rebuild --by drill --why "DRILL-6 projection lost"
wait_for 0 60 relayctl verify
if [ "$search" = true ]; then
  expect 0 relayctl rebuild --reindex --restate=false --by drill --why "DRILL-7 new index"
  wait_for 0 30 relayctl verify
fi
contains "CONVERGED"

step "incident: Pub/Sub unavailable (emulator stopped, restarted empty), recovery"
emu() { EVENTRELAY_PUBSUB_DIR=$run/emulator EVENTRELAY_PUBSUB_PORT=$DRILL_PUBSUB_PORT scripts/pubsub-emulator.sh "$@"; }
emu stop >>"$log" 2>&1
for i in 1 2 3; do
  curl -fsS -X POST http://127.0.0.1:18000/v1/videos -H 'content-type: application/json' \
    -d "{\"uploader_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"title\":\"during outage $i\"}" >/dev/null
done
wait_for 22 60 curl -fsS http://127.0.0.1:18081/readyz    # publisher not ready: Pub/Sub unreachable
wait_for 0 60 sh -c "relayctl status --json | jq -e '.outbox.lag > 0'"
emu start >>"$log" 2>&1
expect 0 relayctl pubsub ensure -f configs/pubsub.yaml
# Rows that reached the empty emulator before ensure failed with
# topic_not_found; rows that ran out of attempts, max_attempts_exceeded.
expect 0 relayctl replay --reason topic_not_found --since 1h --by drill --why "DRILL-8 emulator restarted"
expect 0 relayctl replay --reason max_attempts_exceeded --since 1h --by drill --why "DRILL-8 emulator restarted"
wait_for 0 60 curl -fsS http://127.0.0.1:18081/readyz
wait_for 0 120 relayctl verify
wait_for 0 60 relayctl status -f configs/pubsub.yaml

step "incident: rolling restart of the publisher (SIGTERM drains, nothing lost)"
kill -TERM "$publisher_pid"
wait "$publisher_pid" || { echo "publisher did not exit 0 on SIGTERM" >&2; exit 1; }
curl -fsS -X POST http://127.0.0.1:18000/v1/videos -H 'content-type: application/json' \
  -d "{\"uploader_id\":\"$(cat /proc/sys/kernel/random/uuid)\",\"title\":\"during restart\"}" >/dev/null
expect 0 relayctl status
contains "pending"
start_publisher
wait_for 0 30 curl -fsS http://127.0.0.1:18081/readyz
wait_for 0 60 relayctl verify
expect 0 relayctl status -f configs/pubsub.yaml
