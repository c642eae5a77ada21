# common.sh: helpers for integration tests (sourced, not run). Each test gets a temp dir, starts
# its own servers on free loopback ports, and everything it started is stopped on exit.
# shellcheck shell=bash

set -euo pipefail

# Absolute, so tests may cd and hand the paths to servers (Prometheus' rule_files symlink)
QREL_SOURCE_DIR=$(cd "${QREL_SOURCE_DIR:-$(dirname "${BASH_SOURCE[0]}")/../..}" && pwd)
QREL_BUILD_DIR=$(cd "${QREL_BUILD_DIR:-$QREL_SOURCE_DIR/build}" && pwd)
export EXPORTER=$QREL_BUILD_DIR/qrel_exporter
export QREL=$QREL_BUILD_DIR/qrel
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-test.XXXXXX")
chmod 755 "$T"
PIDS=()
REDIS_PORTS=()
PG_DATA_DIRS=()
CHECKS=0
FAILS=0

cleanup() {
  local rc=$?
  # By pid file, not redis-cli shutdown: some test servers want a password.
  local pidfile
  for p in "${REDIS_PORTS[@]}"; do
    pidfile=$T/redis-$p/redis.pid
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  for p in "${REDIS_PORTS[@]}"; do # redis removes its pid file as it exits
    for _ in $(seq 1 100); do [ -f "$T/redis-$p/redis.pid" ] || break; sleep 0.02; done
  done
  for d in "${PG_DATA_DIRS[@]}"; do
    [ -f "$d/postmaster.pid" ] && as_postgres "$PGBIN/pg_ctl" -D "$d" -m fast -w -t 10 stop >/dev/null 2>&1 || true
  done
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ] || [ "$FAILS" -ne 0 ]; then
    echo "--- exporter logs kept in $T" >&2
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  else
    rm -rf "$T" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "error: ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND" >&2' ERR

# free_port: a TCP port nothing listens on now (the kernel's choice, then released).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || shuf -i 20000-32000 -n 1
}

# start_redis VAR [extra redis-server args...]: starts redis-server on a free port, sets VAR to it.
start_redis() {
  local var=$1 port dir; shift
  port=$(free_port)
  dir=$T/redis-$port
  mkdir -p "$dir"
  redis-server --bind 127.0.0.1 --port "$port" --daemonize yes --pidfile "$dir/redis.pid" \
    --dir "$dir" --logfile "$dir/redis.log" --save '' --appendonly no "$@" >/dev/null
  REDIS_PORTS+=("$port")
  for _ in $(seq 1 100); do
    if redis-cli -p "$port" ${REDISCLI_AUTH:+--no-auth-warning} ping 2>/dev/null | grep -qE 'PONG|NOAUTH'; then
      printf -v "$var" '%s' "$port"
      return 0
    fi
    sleep 0.05
  done
  echo "redis-server on port $port did not start" >&2
  return 1
}

# PostgreSQL's server programs: from PATH, else where pg_config says (Debian keeps initdb off
# PATH, in a versioned directory that pg_config from libpq-dev names).
PGBIN=${PGBIN:-$(dirname "$(command -v initdb 2>/dev/null || true)")}
if [ ! -x "$PGBIN/initdb" ] && command -v pg_config >/dev/null; then
  PGBIN=$(pg_config --bindir)
fi
# initdb and pg_ctl refuse to run as root: as root they run as the postgres user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# start_postgres VAR [PG_HBA_FILE]: a throwaway PostgreSQL cluster (superuser postgres, trust
# auth unless a pg_hba.conf is given) on 127.0.0.1 and a free port, with its socket in its own
# directory under $T; sets VAR and PG_PORT (for psql_do) to the port. Stopped on exit.
start_postgres() {
  local var=$1 hba=${2:-} port dir
  port=$(free_port)
  dir=$T/pg-$port
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  as_postgres "$PGBIN/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 \
    --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  if [ -n "$hba" ]; then
    cp "$hba" "$dir/data/pg_hba.conf"
    [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/data/pg_hba.conf"
  fi
  PG_DATA_DIRS+=("$dir/data")
  as_postgres "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off" start >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  for _ in $(seq 1 100); do
    if pg_isready -q -h 127.0.0.1 -p "$port" -U postgres; then
      printf -v "$var" '%s' "$port"
      PG_PORT=$port
      return 0
    fi
    sleep 0.05
  done
  echo "postgres on port $port did not start" >&2
  return 1
}

# stop_postgres PORT: stops the cluster started on PORT (fast shutdown).
stop_postgres() {
  as_postgres "$PGBIN/pg_ctl" -D "$T/pg-$1/data" -m fast -w -t 10 stop >/dev/null
}

# psql_do SQL...: runs SQL as postgres on the last started cluster, stopping at the first error;
# with no argument, reads SQL from stdin. psql_val SQL: the single value a query returns.
psql_do() {
  if [ $# -gt 0 ]; then
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$*"
  else
    psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres
  fi
}
psql_val() {
  psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$*"
}

# start_exporter CONFIG [flags...]: runs qrel_exporter on a free port; sets ADDR and EXPORTER_PID.
# Its log goes to $T/exporter.log (debug level).
start_exporter() {
  local config=$1; shift
  : > "$T/exporter.log"
  "$EXPORTER" --config.file="$config" --web.listen-address=127.0.0.1:0 --log.level=debug "$@" \
    2>>"$T/exporter.log" &
  EXPORTER_PID=$!
  PIDS+=("$EXPORTER_PID")
  for _ in $(seq 1 100); do
    ADDR=$(sed -nE -e 's/.*msg=listening address=([^ ]+).*/\1/p' \
      -e 's/.*"msg":"listening","address":"([^"]+)".*/\1/p' "$T/exporter.log" | tail -1)
    [ -n "$ADDR" ] && return 0
    sleep 0.05
  done
  echo "qrel_exporter did not start:" >&2
  cat "$T/exporter.log" >&2
  return 1
}

stop_exporter() {
  kill "$EXPORTER_PID" 2>/dev/null || true
  wait "$EXPORTER_PID" 2>/dev/null || true
}

# scrape FILE [curl args...]: GET /metrics into FILE.
scrape() {
  local out=$1; shift
  curl -fsS "$@" "http://$ADDR/metrics" -o "$out"
}

# mval FILE NAME [LABEL=\"VALUE\"...]: the value of the first sample of NAME whose labels contain
# every given pair; prints nothing when there is none.
mval() {
  local file=$1 name=$2; shift 2
  # Passed through the environment: awk -v would interpret the backslashes of escaped labels.
  MVAL_NAME=$name MVAL_WANT="$*" awk '
    BEGIN { name = ENVIRON["MVAL_NAME"]; n = split(ENVIRON["MVAL_WANT"], pairs, " ") }
    index($0, name "{") == 1 || index($0, name " ") == 1 {
      ok = 1
      for (i = 1; i <= n; i++) if (index($0, pairs[i]) == 0) ok = 0
      if (ok) { print $NF; exit }
    }' "$file"
}

ok() { CHECKS=$((CHECKS + 1)); printf 'ok   %s\n' "$1"; }
not_ok() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); printf 'FAIL %s\n' "$1" >&2; }

# expect_eq WHAT GOT WANT
expect_eq() {
  if [ "$2" = "$3" ]; then ok "$1 = $3"; else not_ok "$1: got '$2', want '$3'"; fi
}

# expect_between WHAT GOT LOW HIGH (numbers, inclusive)
expect_between() {
  if [ -n "$2" ] && awk -v g="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(g + 0 >= lo && g + 0 <= hi) }'; then
    ok "$1 = $2 (in [$3, $4])"
  else
    not_ok "$1: got '$2', want within [$3, $4]"
  fi
}

# expect_metric FILE WANT NAME [LABEL=\"VALUE\"...]
expect_metric() {
  local file=$1 want=$2 name=$3; shift 3
  expect_eq "$name{$*}" "$(mval "$file" "$name" "$@")" "$want"
}

expect_absent() { # expect_absent FILE NAME [labels...]
  local file=$1 name=$2; shift 2
  local got
  got=$(mval "$file" "$name" "$@")
  if [ -z "$got" ]; then ok "$name{$*} absent"; else not_ok "$name{$*}: want no series, got $got"; fi
}

# expect_cmd WHAT CMD...: the command succeeds
expect_cmd() {
  local what=$1; shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# now_ms: milliseconds since the epoch; ms_since T0
now_ms() { date +%s%3N; }

finish() {
  echo "$((CHECKS - FAILS)) passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
}

# start_http_stub VAR MODE [http_stub.py args...]: a loopback HTTP peer (tests/lib/http_stub.py:
# ok, routes, hang, close, garbage, truncated, huge); its port goes to VAR, stopped on exit.
start_http_stub() {
  local var=$1 mode=$2 pf; shift 2
  pf=$T/stub-$mode-$RANDOM.port
  python3 "$QREL_SOURCE_DIR/tests/lib/http_stub.py" --mode "$mode" --port-file "$pf" "$@" \
    >"$pf.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 200); do
    if [ -s "$pf" ]; then
      printf -v "$var" '%s' "$(cat "$pf")"
      return 0
    fi
    sleep 0.025
  done
  echo "http stub ($mode) did not start: $(cat "$pf.log")" >&2
  return 1
}

# start_tcp_stub VAR MODE: a loopback TCP peer below any protocol (tests/lib/tcp_stub.py: silent,
# garbage); its port goes to VAR, stopped on exit.
start_tcp_stub() {
  local var=$1 mode=$2 pf
  pf=$T/tcp-$mode-$RANDOM.port
  python3 "$QREL_SOURCE_DIR/tests/lib/tcp_stub.py" --mode "$mode" --port-file "$pf" >"$pf.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 200); do
    if [ -s "$pf" ]; then
      printf -v "$var" '%s' "$(cat "$pf")"
      return 0
    fi
    sleep 0.025
  done
  echo "tcp stub ($mode) did not start: $(cat "$pf.log")" >&2
  return 1
}
