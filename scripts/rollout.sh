#!/usr/bin/env bash
# Rolls a release out in the phases of docs/rollout.md, each gated on the
# cluster's answer before the next starts:
#
#   1. migrate: apply the migration Job of this release and wait until it
#      completes (a failed Job stops the release; nothing else changed);
#   2. writers and publisher: apply everything except the migration and the
#      projector, wait for the publisher and catalog rollouts, then check
#      the outbox (relayctl status);
#   3. consumers: apply the projector, wait for its rollout, then relayctl
#      status and relayctl verify.
#
#   scripts/rollout.sh [overlay]        # default deploy/k8s/overlays/gke
#
# Renders the overlay once and applies selections of that one rendering,
# so a release is one commit of deploy/. The release is the overlay's
# release.env (the Job is migrate-<release>); the placeholder v0.0.0-unset
# is refused. Environment: KUBECTL (kubectl), NS (eventrelay),
# MIGRATE_TIMEOUT (16m: the Job's activeDeadlineSeconds is 15m),
# ROLLOUT_TIMEOUT (10m), RELAYCTL (relayctl, run with the operator's
# DATABASE_URL / DATABASE_SCHEMA / PUBSUB_PROJECT_ID), PUBSUB_CONFIG
# (configs/pubsub.yaml); SKIP_RELAYCTL=1 skips the relayctl gates and says
# so. Exit 0 only when every phase passed its gate.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
overlay=${1:-$repo/deploy/k8s/overlays/gke}
kubectl=${KUBECTL:-kubectl}
relayctl=${RELAYCTL:-relayctl}
ns=${NS:-eventrelay}
migrate_timeout=${MIGRATE_TIMEOUT:-16m}
rollout_timeout=${ROLLOUT_TIMEOUT:-10m}
pubsub_config=${PUBSUB_CONFIG:-$repo/configs/pubsub.yaml}

say() { echo "rollout: $*" >&2; }
fail() { say "FAILED: $*"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
render=$work/release.yaml

release=$(sed -n 's/^EVENTRELAY_RELEASE=//p' "$overlay/release.env")
[ -n "$release" ] || fail "$overlay/release.env names no EVENTRELAY_RELEASE"
[ "$release" != v0.0.0-unset ] || fail "release.env still holds the placeholder v0.0.0-unset: write the release (docs/rollout.md, Before a release)"
job=migrate-$release
"$kubectl" kustomize "$overlay" >"$render" || fail "kubectl kustomize $overlay"
grep -q "^  name: $job\$" "$render" || fail "the rendering has no Job $job"
say "release $release from $overlay"

relayctl_gate() {
  if [ "${SKIP_RELAYCTL:-}" = 1 ]; then
    say "SKIPPED: $relayctl $* (SKIP_RELAYCTL=1)"
    return
  fi
  "$relayctl" "$@" || fail "$relayctl $*"
}

# wait_job waits until Job $1 completes or fails, whichever comes first.
wait_job() {
  local pids=() first
  "$kubectl" -n "$ns" wait --for=condition=complete "job/$1" --timeout="$migrate_timeout" >/dev/null &
  pids+=($!)
  "$kubectl" -n "$ns" wait --for=condition=failed "job/$1" --timeout="$migrate_timeout" >/dev/null &
  pids+=($!)
  local code=0
  wait -n -p first "${pids[@]}" || code=$?
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  if [ "$code" != 0 ]; then
    fail "job/$1 neither completed nor failed within $migrate_timeout"
  fi
  if [ "$first" = "${pids[1]}" ]; then
    "$kubectl" -n "$ns" logs "job/$1" -c relayctl --tail=50 >&2 || true
    fail "job/$1 failed: the release stops here (nothing but the migration changed)"
  fi
}

rollout() {
  for d in "$@"; do
    "$kubectl" -n "$ns" rollout status "deploy/$d" --timeout="$rollout_timeout" >&2 ||
      fail "deploy/$d did not roll out (the old pods keep serving; fix or roll back: docs/rollout.md)"
  done
}

say "phase 1: migrate ($job)"
"$kubectl" apply -f "$render" -l app.kubernetes.io/component=migration >&2
wait_job "$job"
say "phase 1: $job complete"

say "phase 2: writers and publisher"
"$kubectl" apply -f "$render" -l 'app.kubernetes.io/component notin (migration,projector)' >&2
rollout publisher catalog
relayctl_gate status -f "$pubsub_config"
say "phase 2: publisher and catalog rolled out, outbox healthy"

say "phase 3: consumers"
"$kubectl" apply -f "$render" -l app.kubernetes.io/component=projector >&2
rollout projector
relayctl_gate status -f "$pubsub_config"
relayctl_gate verify
say "release $release rolled out"
