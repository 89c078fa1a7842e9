#!/usr/bin/env bash
# Google Cloud Pub/Sub emulator for development, the demo and the e2e suite.
#
#   scripts/pubsub-emulator.sh start    # idempotent; prints the env vars to use
#   scripts/pubsub-emulator.sh fresh    # stop, wipe the data dir, start (a new JVM)
#   scripts/pubsub-emulator.sh stop     # kills the whole process group (gcloud + JVM)
#   scripts/pubsub-emulator.sh restart  # stop + start (the emulator keeps no state)
#   scripts/pubsub-emulator.sh status
#   scripts/pubsub-emulator.sh env      # prints the env vars without starting anything
#   scripts/pubsub-emulator.sh installed  # exit 0 if gcloud, java and the emulator are installed
#
# Runs `gcloud beta emulators pubsub start` in its own session (setsid), so
# stop can kill gcloud's python wrapper and the JVM it spawns as one process
# group. Data and log live in $EVENTRELAY_PUBSUB_DIR (default
# <repo>/.run/pubsub-emulator); it listens on 127.0.0.1:$EVENTRELAY_PUBSUB_PORT
# (default 28085) for project $PUBSUB_PROJECT_ID (default eventrelay-local).
#
# The emulator leaks about one JVM thread per ordering key per ordered
# subscription, even after deletion, and keeps nothing across restarts:
# use `fresh` once per demo or suite run and re-run `relayctl pubsub ensure`
# after every (re)start.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${EVENTRELAY_PUBSUB_DIR:-$repo/.run/pubsub-emulator}
port=${EVENTRELAY_PUBSUB_PORT:-28085}
project=${PUBSUB_PROJECT_ID:-eventrelay-local}
pidfile=$dir/emulator.pid
log=$dir/emulator.log

print_env() {
  echo "export PUBSUB_EMULATOR_HOST=127.0.0.1:${port}"
  echo "export PUBSUB_PROJECT_ID=${project}"
}

# answers: the emulator serves plain HTTP GET / with "Ok" on its gRPC port.
answers() {
  local out
  out=$(curl -s -m 1 "http://127.0.0.1:${port}/" 2>/dev/null) || return 1
  [ "$out" = "Ok" ]
}

# group_alive: the process group recorded in the pid file still has members.
group_alive() {
  [ -f "$pidfile" ] || return 1
  local pgid
  pgid=$(cat "$pidfile")
  [ -n "$pgid" ] && kill -0 -- "-$pgid" 2>/dev/null
}

is_running() { group_alive && answers; }

start() {
  if is_running; then
    print_env
    return 0
  fi
  if group_alive; then
    # A group that does not answer (still booting or wedged): replace it.
    stop
  fi
  if answers; then
    echo "pubsub-emulator.sh: 127.0.0.1:${port} already answers but is not ours (no live group in $pidfile); stop it or set EVENTRELAY_PUBSUB_PORT" >&2
    exit 1
  fi
  if ! command -v gcloud >/dev/null 2>&1; then
    echo "pubsub-emulator.sh: gcloud not found; install the Google Cloud SDK with the pubsub-emulator component" >&2
    exit 3
  fi
  if ! command -v java >/dev/null 2>&1; then
    echo "pubsub-emulator.sh: java not found; the Pub/Sub emulator needs a JRE" >&2
    exit 3
  fi
  local sdk
  sdk=$(cd "$(dirname "$(readlink -f "$(command -v gcloud)")")/.." && pwd)
  if [ ! -x "$sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator" ]; then
    echo "pubsub-emulator.sh: the pubsub-emulator component is not installed in $sdk (gcloud components install pubsub-emulator, or apt-get install google-cloud-cli-pubsub-emulator)" >&2
    exit 3
  fi
  mkdir -p "$dir/data"
  # setsid: new session and process group whose id is the pid we record.
  setsid gcloud beta emulators pubsub start \
    --host-port="127.0.0.1:${port}" --project="${project}" --data-dir="$dir/data" \
    --verbosity=warning >"$log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$pidfile"
  local deadline=$((SECONDS + ${EVENTRELAY_PUBSUB_START_TIMEOUT:-60}))
  until answers; do
    # The leader itself, not the group: the group exists only once setsid
    # has run in the child.
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "pubsub-emulator.sh: the emulator exited during start-up; last log lines:" >&2
      tail -n 30 "$log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "pubsub-emulator.sh: the emulator did not answer on 127.0.0.1:${port} in time; last log lines:" >&2
      tail -n 30 "$log" >&2
      stop
      exit 1
    fi
    sleep 0.3
  done
  print_env
}

stop() {
  group_alive || { rm -f "$pidfile"; return 0; }
  local pgid
  pgid=$(cat "$pidfile")
  kill -TERM -- "-$pgid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 -- "-$pgid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pgid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 -- "-$pgid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$pidfile"
}

# installed: exit 0 when gcloud, java and the emulator component are present.
installed() {
  command -v gcloud >/dev/null 2>&1 && command -v java >/dev/null 2>&1 || return 1
  local sdk
  sdk=$(cd "$(dirname "$(readlink -f "$(command -v gcloud)")")/.." && pwd)
  [ -x "$sdk/platform/pubsub-emulator/bin/cloud-pubsub-emulator" ]
}

case "${1:-start}" in
  start) start ;;
  fresh) stop; rm -rf "$dir/data"; start ;;
  stop) stop ;;
  restart) stop; start ;;
  status)
    if is_running; then echo "running on 127.0.0.1:${port} (pgid $(cat "$pidfile"), log: $log)"
    else echo "stopped"; exit 1; fi ;;
  env) print_env ;;
  installed) installed ;;
  *) echo "usage: $0 start|fresh|stop|restart|status|env|installed" >&2; exit 2 ;;
esac
