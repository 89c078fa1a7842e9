#!/usr/bin/env bash
# Private PostgreSQL instance for development, tests and the demo.
#
#   scripts/pg.sh start   # idempotent; prints the env vars to use
#   scripts/pg.sh stop
#   scripts/pg.sh restart
#   scripts/pg.sh status
#   scripts/pg.sh env     # prints DATABASE_URL etc. without starting anything
#
# Uses the installed server binaries (no system cluster, no Docker). When run
# as root it drops to the "postgres" user for initdb/pg_ctl. Data lives in
# $EVENTRELAY_PG_DIR (default: <repo>/.run/postgres; as root, in /var/tmp
# when the postgres user cannot enter that path), port $EVENTRELAY_PG_PORT
# (default 25432), listening on 127.0.0.1 only, trust auth (local dev only).
# Default ports of this project stay below 32768, outside Linux's ephemeral
# range: a client socket in TIME_WAIT on the same port made a start fail
# with "Address already in use".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${EVENTRELAY_PG_DIR:-$repo/.run/postgres}
port=${EVENTRELAY_PG_PORT:-25432}
db=${EVENTRELAY_PG_DB:-eventrelay}
password_role=eventrelay_password_check

bindir=${PG_BINDIR:-}
if [ -z "$bindir" ]; then
  if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
    bindir=$(pg_config --bindir)
  else
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  fi
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "pg.sh: PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin; set PG_BINDIR)" >&2
  exit 1
fi

as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# As root, initdb and pg_ctl run as "postgres", which must be able to enter
# the data directory. A checkout under /root or in a root user's mktemp -d is
# closed to it: then the cluster lives in /var/tmp/eventrelay-pg-<hash of
# the directory's path> instead (the same one on every call for this path).
resolve_dir() {
  [ "$(id -u)" = 0 ] || return 0
  mkdir -p "$dir"
  chown postgres: "$dir"
  if runuser -u postgres -- test -w "$dir" -a -x "$dir" 2>/dev/null; then
    return 0
  fi
  local abs key
  abs=$(cd "$dir" && pwd)
  key=$(printf '%s' "$abs" | sha256sum | cut -c1-16)
  dir=/var/tmp/eventrelay-pg-$key
  mkdir -p "$dir"
  chown postgres: "$dir"
  chmod 700 "$dir"
  if [ "${1:-}" = start ]; then
    echo "pg.sh: the postgres user cannot enter $abs; the cluster lives in $dir" >&2
  fi
}
resolve_dir "${1:-start}"

url="postgres://postgres@127.0.0.1:${port}/${db}?sslmode=disable"

print_env() {
  echo "export DATABASE_URL='${url}'"
  echo "export TEST_DATABASE_URL='${url}'"
  echo "export PGHOST=127.0.0.1 PGPORT=${port} PGUSER=postgres PGDATABASE=${db}"
}

# Logical decoding (relay.ModeLog reads the outbox from a replication
# slot): every private cluster has it, also one initialized before it.
# Slots left behind retain WAL; max_slot_wal_keep_size caps what they keep.
ensure_logical() {
  if ! as_pg grep -q '^wal_level = logical' "$dir/data/postgresql.conf"; then
    as_pg tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
wal_level = logical
max_replication_slots = 64
max_wal_senders = 64
max_slot_wal_keep_size = 1GB
CONF
    if is_running; then
      as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w restart -o "-p ${port}" -l "$dir/server.log" >/dev/null
    fi
  fi
}

# pg_stat_statements (when the server has it): per-statement calls, time,
# buffers and WAL, which the bench's cost scenario reports for the relay's
# statements. Added to clusters made before it too.
ensure_statements() {
  [ -f "$(dirname "$bindir")/lib/pg_stat_statements.so" ] || [ -f "$("$bindir/pg_config" --pkglibdir 2>/dev/null)/pg_stat_statements.so" ] || return 0
  if ! as_pg grep -q "^shared_preload_libraries = 'pg_stat_statements'" "$dir/data/postgresql.conf"; then
    as_pg tee -a "$dir/data/postgresql.conf" >/dev/null <<CONF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = top
CONF
    if is_running; then
      as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w restart -o "-p ${port}" -l "$dir/server.log" >/dev/null
    fi
  fi
}

is_running() {
  [ -f "$dir/data/postmaster.pid" ] && as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1
}

start() {
  mkdir -p "$dir"
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-instructions >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = ${port}
unix_socket_directories = '${dir}'
max_connections = 300
shared_buffers = 256MB
fsync = ${EVENTRELAY_PG_FSYNC:-on}
synchronous_commit = ${EVENTRELAY_PG_SYNC_COMMIT:-on}
log_min_messages = warning
CONF
  fi
  ensure_logical
  ensure_statements
  if ! is_running; then
    # -p: the port in effect is this run's, also for a data directory
    # initialized with another one.
    as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p ${port}" -w -t 60 start >/dev/null \
      || { tail -n 30 "$dir/server.log" >&2
           if tail -n 30 "$dir/server.log" | grep -q 'Address already in use'; then
             echo "pg.sh: port ${port} is taken; choose another with EVENTRELAY_PG_PORT" >&2
           fi
           exit 1; }
  fi
  for _ in $(seq 1 50); do
    "$bindir/pg_isready" -h 127.0.0.1 -p "$port" -q && break
    sleep 0.2
  done
  # One role authenticates by password (everyone else is trusted): tests
  # of a wrong password (postgres.TestClassifyAuthenticationFailures) need
  # the server to check one. Added to clusters made before it too.
  hba_line="host all ${password_role} 127.0.0.1/32 scram-sha-256"
  if ! as_pg grep -qxF "$hba_line" "$dir/data/pg_hba.conf"; then
    as_pg sed -i "1i ${hba_line}" "$dir/data/pg_hba.conf"
    as_pg "$bindir/pg_ctl" -D "$dir/data" reload >/dev/null
  fi
  if ! "$bindir/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='${db}'" | grep -q 1; then
    "$bindir/createdb" -h 127.0.0.1 -p "$port" -U postgres "$db"
  fi
  print_env
}

stop() {
  if is_running; then
    as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  fi
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  status) if is_running; then echo "running on 127.0.0.1:${port} (data: $dir/data)"; else echo "stopped"; exit 1; fi ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|restart|status|env" >&2; exit 2 ;;
esac
